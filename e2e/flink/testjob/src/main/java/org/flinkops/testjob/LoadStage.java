package org.flinkops.testjob;

import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;

import java.util.concurrent.locks.LockSupport;

/**
 * The {@code load} stage of {@code --load-file}: passes every record on unchanged after sleeping
 * the file's {@code cost-ms} (see {@link LoadFile}), re-read at most once a second. Sleeping in
 * the task thread counts as busy time in Flink ({@code busyTimeMsPerSecond} of the {@code load}
 * vertex), yet costs no CPU. Stateless; it runs keyed by the counter's key, so that records of one
 * key stay in order on their way to the counter. Gauge {@code loadCostMs}: the cost in force.
 */
final class LoadStage extends RichMapFunction<Long, Long> {
    private static final long serialVersionUID = 1L;

    private final String path;
    private final double initialCostMs;

    private transient LoadFile file;
    private transient volatile double costMs;
    private transient long costNanos;

    LoadStage(String path, double initialCostMs) {
        this.path = path;
        this.initialCostMs = initialCostMs;
    }

    @Override
    public void open(OpenContext ctx) {
        file = new LoadFile(path, 0, initialCostMs, "load stage");
        file.check();
        setCost(file.costMs());
        getRuntimeContext().getMetricGroup().gauge("loadCostMs", () -> costMs);
    }

    @Override
    public Long map(Long seq) throws Exception {
        if (file.poll()) {
            setCost(file.costMs());
        }
        if (costNanos > 0) {
            pause(costNanos);
        }
        return seq;
    }

    private void setCost(double ms) {
        costMs = ms;
        costNanos = (long) (ms * 1_000_000d);
    }

    /** Sleeps nanos (sub-millisecond too, unlike Thread.sleep); an interrupt (cancel) ends it. */
    static void pause(long nanos) throws InterruptedException {
        long deadline = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
            if (Thread.interrupted()) {
                throw new InterruptedException("CountingJob load stage interrupted");
            }
        }
    }
}
