package org.flinkops.testjob;

import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;

/**
 * The source's rate limiter with {@code --load-file}: the rate is the file's {@code rate} (see
 * {@link LoadFile}), records per second across the source's subtasks, re-read at most once a
 * second, so a change takes effect within about a second. {@code rate=0} pauses the source.
 *
 * <p>Raw types on purpose: {@link RateLimiter} and {@link RateLimiterStrategy} are generic in
 * Flink 2.x (in the split type) and not in 1.20, and this one source compiles against both. For
 * the same reason both {@code acquire()} (1.20's only method) and {@code acquire(int)} (2.x's
 * abstract one) are implemented, without {@code @Override}.
 */
@SuppressWarnings({"rawtypes", "unchecked"})
final class LoadRateLimiterStrategy implements RateLimiterStrategy {
    private static final long serialVersionUID = 1L;

    private final String path;
    private final double initialRate;

    LoadRateLimiterStrategy(String path, double initialRate) {
        this.path = path;
        this.initialRate = initialRate;
    }

    @Override
    public RateLimiter createRateLimiter(int parallelism) {
        return new Limiter(new LoadFile(path, initialRate, 0, "source"), Math.max(1, parallelism));
    }

    /**
     * Paces permits {@code 1 / (rate / parallelism)} seconds apart. After a stall it lets up to
     * {@link #MAX_CATCH_UP_NANOS} of missed permits through at once (so per-record overhead does
     * not lower the rate), never more. While it has to wait it looks again every {@link
     * #RECHECK_NANOS}, so a new rate applies even in the middle of a long wait. The waits run on
     * the JDK's {@link CompletableFuture#delayedExecutor} (no thread of its own to leak).
     */
    static final class Limiter implements RateLimiter {
        private static final long MAX_CATCH_UP_NANOS = 100_000_000L;
        private static final long RECHECK_NANOS = 200_000_000L;

        private final LoadFile file;
        private final int parallelism;
        private double perSubtask;
        private long nextFree;

        Limiter(LoadFile file, int parallelism) {
            this.file = file;
            this.parallelism = parallelism;
            file.check();
            this.perSubtask = file.rate() / parallelism;
            this.nextFree = System.nanoTime();
        }

        public CompletionStage<Void> acquire() {
            return acquire(1);
        }

        public CompletionStage<Void> acquire(int permits) {
            CompletableFuture<Void> f = new CompletableFuture<>();
            grant(f, Math.max(1, permits));
            return f;
        }

        private void grant(CompletableFuture<Void> f, int permits) {
            long wait;
            synchronized (this) {
                long now = System.nanoTime();
                if (file.poll()) {
                    perSubtask = file.rate() / parallelism;
                    nextFree = now;
                }
                if (perSubtask <= 0) {
                    wait = RECHECK_NANOS;
                } else {
                    long start = Math.max(nextFree, now - MAX_CATCH_UP_NANOS);
                    if (start - now <= 0) {
                        nextFree = start + (long) (permits * 1e9 / perSubtask);
                        wait = 0;
                    } else {
                        wait = Math.min(start - now, RECHECK_NANOS);
                    }
                }
            }
            if (wait == 0) {
                f.complete(null);
            } else {
                CompletableFuture.delayedExecutor(wait, TimeUnit.NANOSECONDS)
                        .execute(() -> grant(f, permits));
            }
        }
    }
}
