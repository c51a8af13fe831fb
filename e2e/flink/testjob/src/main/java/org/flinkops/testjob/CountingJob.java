package org.flinkops.testjob;

import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.accumulators.LongMaximum;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;

/**
 * A tiny stateful streaming job for the operator's end-to-end tests. It compiles unchanged against
 * Flink 1.20 and 2.x.
 *
 * <p>Pipeline: a rate-limited {@link DataGeneratorSource} (parallelism 1) emits the sequence 0, 1,
 * 2, ...; {@code keyBy(seq % keys)}; a {@link KeyedProcessFunction} counts records per key in a
 * {@code ValueState<Long>}; a discarding sink. Every operator has an explicit uid ({@code source},
 * {@code counter}, {@code sink}), so savepoints restore across restarts and rescaling.
 *
 * <p>Because the source is sequential and its position is part of every checkpoint, a correct
 * (exactly-once) state always satisfies {@code count == seq / keys + 1}. The counter checks this
 * for every record; a violation (e.g. keyed state dropped by {@code --allowNonRestoredState} after a
 * uid change) is counted in the {@code mismatches} accumulator and logged at WARN.
 *
 * <p>Observable state, via REST {@code GET /jobs/:id/accumulators} ("user-task-accumulators",
 * reported with TaskManager heartbeats, i.e. every {@code heartbeat.interval}):
 *
 * <ul>
 *   <li>{@code max-count}: the highest per-key count seen by this execution attempt. It derives from
 *       the keyed state, so after a restore it continues from the snapshot instead of restarting at
 *       1;
 *   <li>{@code records}: records processed by this execution attempt (accumulators are not part of
 *       snapshots, so this restarts at 0);
 *   <li>{@code mismatches}: see above; 0 unless state was lost.
 * </ul>
 *
 * <p>The same values are a gauge {@code maxCount} on the counter's metric group, and every
 * {@code --log-every}-th count per key is logged as {@code CountingJob key=K count=C seq=S} to the
 * TaskManager log.
 *
 * <p>Arguments (all optional): {@code --rate N} records/s (10), {@code --keys N} (10), {@code
 * --fail-after N} throw from the counter after N records in one execution attempt (0 = never; the
 * job fails again after every restart), {@code --log-every N} (10), {@code --checkpoint-interval
 * MS} used only if the cluster configuration does not enable checkpointing (5000; 0 = leave off),
 * {@code --job-name NAME} ("CountingJob").
 *
 * <p>A job that can be loaded (only with {@code --load-file PATH}; without it the job graph is the
 * one above, unchanged): the source's rate is re-read from the file (see {@link LoadFile}: {@code
 * rate=N}, {@code cost-ms=M}; {@code --rate} is the rate until the file gives one), and a stage
 * {@code load} (uid and name {@code load}, its own job vertex: keyed by {@code seq % keys}, chaining
 * disabled, max parallelism {@code --load-max-parallelism}, default 128) between the source and the
 * counter sleeps {@code cost-ms} per record ({@code --cost-ms} until the file gives one, default 0),
 * which Flink counts as busy time. The stage is stateless and keyed like the counter, so records of
 * a key keep their order and the invariant above holds at any parallelism of the stage, across
 * savepoints and rescaling. See e2e/flink/README.md.
 */
public final class CountingJob {

    private static final Logger LOG = LoggerFactory.getLogger(CountingJob.class);

    /** uid and name of the load stage (and so its job vertex's name) with {@code --load-file}. */
    static final String LOAD_UID = "load";

    /** Default max parallelism (key groups) of the load stage: {@code --load-max-parallelism}. */
    static final int LOAD_MAX_PARALLELISM = 128;

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parseArgs(args);
        long rate = Long.parseLong(opts.getOrDefault("rate", "10"));
        long keys = Long.parseLong(opts.getOrDefault("keys", "10"));
        long failAfter = Long.parseLong(opts.getOrDefault("fail-after", "0"));
        long logEvery = Long.parseLong(opts.getOrDefault("log-every", "10"));
        long checkpointInterval = Long.parseLong(opts.getOrDefault("checkpoint-interval", "5000"));
        String jobName = opts.getOrDefault("job-name", "CountingJob");
        if (rate <= 0 || keys <= 0 || logEvery <= 0 || failAfter < 0) {
            throw new IllegalArgumentException("--rate, --keys and --log-every must be > 0, --fail-after >= 0");
        }
        String loadFile = opts.get("load-file");
        double costMs = Double.parseDouble(opts.getOrDefault("cost-ms", "0"));
        int loadMaxParallelism =
                Integer.parseInt(opts.getOrDefault("load-max-parallelism", String.valueOf(LOAD_MAX_PARALLELISM)));
        if (loadFile != null && (loadFile.isEmpty() || !(costMs >= 0) || Double.isInfinite(costMs)
                || loadMaxParallelism < 1 || loadMaxParallelism > 32768)) {
            throw new IllegalArgumentException(
                    "--load-file must not be empty, --cost-ms must be >= 0, --load-max-parallelism in [1, 32768]");
        }

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (checkpointInterval > 0 && !env.getCheckpointConfig().isCheckpointingEnabled()) {
            env.enableCheckpointing(checkpointInterval);
        }

        DataGeneratorSource<Long> source =
                new DataGeneratorSource<>(
                        seq -> seq,
                        Long.MAX_VALUE,
                        loadFile == null
                                ? RateLimiterStrategy.perSecond(rate)
                                : new LoadRateLimiterStrategy(loadFile, rate),
                        Types.LONG);

        DataStream<Long> sequence =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "sequence")
                        .uid("source")
                        .setParallelism(1); // a single split: the sequence is emitted in order
        if (loadFile != null) {
            // The load stage: its own job vertex (keyed input, chaining off), keyed like the
            // counter so that each key's records reach the counter in sequence order at any
            // parallelism of either.
            sequence =
                    sequence.keyBy(seq -> seq % keys, Types.LONG)
                            .map(new LoadStage(loadFile, costMs))
                            .returns(Types.LONG)
                            .uid(LOAD_UID)
                            .name(LOAD_UID)
                            .setMaxParallelism(loadMaxParallelism)
                            .disableChaining();
        }
        sequence.keyBy(seq -> seq % keys, Types.LONG)
                .process(new Counter(keys, failAfter, logEvery))
                .uid("counter")
                .name("counter")
                .sinkTo(new DiscardingSink<>())
                .uid("sink")
                .name("discard");

        LOG.info(
                "CountingJob starting: rate={} keys={} failAfter={} logEvery={}",
                rate, keys, failAfter, logEvery);
        if (loadFile != null) {
            LOG.info(
                    "CountingJob load stage: load file {}, initial cost-ms={}, max parallelism {}",
                    loadFile, costMs, loadMaxParallelism);
        }
        env.execute(jobName);
    }

    /** Accepts {@code --name value} and {@code --name=value}; ignores anything else. */
    static Map<String, String> parseArgs(String[] args) {
        Map<String, String> out = new HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("--")) {
                continue;
            }
            String name = a.substring(2);
            int eq = name.indexOf('=');
            if (eq >= 0) {
                out.put(name.substring(0, eq), name.substring(eq + 1));
            } else if (i + 1 < args.length) {
                out.put(name, args[++i]);
            }
        }
        return out;
    }

    /** Counts records per key in keyed state and checks the count against the sequence number. */
    static final class Counter extends KeyedProcessFunction<Long, Long, String> {
        private static final long serialVersionUID = 1L;

        private final long keys;
        private final long failAfter;
        private final long logEvery;

        private transient ValueState<Long> count;
        private transient LongCounter records;
        private transient LongMaximum maxCount;
        private transient LongCounter mismatches;
        private transient volatile long maxSeen;

        Counter(long keys, long failAfter, long logEvery) {
            this.keys = keys;
            this.failAfter = failAfter;
            this.logEvery = logEvery;
        }

        @Override
        public void open(OpenContext ctx) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            records = new LongCounter();
            maxCount = new LongMaximum();
            mismatches = new LongCounter();
            getRuntimeContext().addAccumulator("records", records);
            getRuntimeContext().addAccumulator("max-count", maxCount);
            getRuntimeContext().addAccumulator("mismatches", mismatches);
            getRuntimeContext().getMetricGroup().gauge("maxCount", () -> maxSeen);
        }

        @Override
        public void processElement(Long seq, Context ctx, Collector<String> out) throws Exception {
            Long prev = count.value();
            long c = (prev == null ? 0 : prev) + 1;
            count.update(c);
            records.add(1L);
            maxCount.add(c);
            if (c > maxSeen) {
                maxSeen = c;
            }

            long key = ctx.getCurrentKey();
            long expected = seq / keys + 1;
            if (c != expected) {
                mismatches.add(1L);
                LOG.warn("CountingJob mismatch key={} count={} seq={} expected={}", key, c, seq, expected);
            }
            if (c % logEvery == 0) {
                LOG.info("CountingJob key={} count={} seq={}", key, c, seq);
            }
            if (failAfter > 0 && records.getLocalValuePrimitive() >= failAfter) {
                throw new RuntimeException(
                        "CountingJob: injected failure after " + failAfter + " records (--fail-after)");
            }
            out.collect("key=" + key + " count=" + c);
        }
    }
}
