package org.flinkops.testjob;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;

/**
 * The load file of {@code --load-file}: a small text file that a test rewrites while the job runs.
 * The source's rate limiter and every subtask of the {@code load} stage each hold one and call
 * {@link #poll()} as they go; it looks at the file at most once per {@link #POLL_NANOS} (a stat;
 * the file is read only when its modification time or size changed).
 *
 * <p>Format: one {@code key=value} per line; blank lines and anything after {@code #} are ignored.
 *
 * <ul>
 *   <li>{@code rate}: records per second of the source, across all its subtasks (a decimal
 *       number, {@code >= 0}; 0 pauses the source);
 *   <li>{@code cost-ms}: milliseconds the {@code load} stage sleeps per record (a decimal number,
 *       {@code >= 0}; 0 passes records straight through).
 * </ul>
 *
 * <p>A key that is absent keeps its current value. A file that is missing, unreadable or has a line
 * that is not one of these keys with a valid value changes nothing (all or nothing, so a half
 * written file is never applied in part): the last values stay, and the problem is logged once
 * (again only when it changes). Writers should write a temporary file and rename it into place.
 *
 * <p>Not thread-safe.
 */
final class LoadFile {

    private static final Logger LOG = LoggerFactory.getLogger(LoadFile.class);

    /** How often {@link #poll()} looks at the file: once a second. */
    static final long POLL_NANOS = 1_000_000_000L;

    private final Path path;
    private final String who;
    private long nextCheck;
    private FileTime mtime;
    private long size = -1;
    private String problem;
    private double rate;
    private double costMs;

    /**
     * @param rate the rate until the file sets one
     * @param costMs the per-record cost until the file sets one
     * @param who names the reader in log lines
     */
    LoadFile(String path, double rate, double costMs, String who) {
        this.path = Paths.get(path);
        this.rate = rate;
        this.costMs = costMs;
        this.who = who;
        this.nextCheck = System.nanoTime();
    }

    double rate() {
        return rate;
    }

    double costMs() {
        return costMs;
    }

    /**
     * Looks at the file if a second passed since the last look, and re-reads it if it changed.
     *
     * @return whether a value changed
     */
    boolean poll() {
        long now = System.nanoTime();
        if (now - nextCheck < 0) {
            return false;
        }
        nextCheck = now + POLL_NANOS;
        return check();
    }

    /** Looks at the file now; returns whether a value changed. */
    boolean check() {
        BasicFileAttributes attrs;
        try {
            attrs = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (IOException | RuntimeException e) {
            problem("cannot stat it (" + e + ")");
            return false;
        }
        if (attrs.lastModifiedTime().equals(mtime) && attrs.size() == size) {
            return false; // unchanged since the last read, whether that succeeded or not
        }
        mtime = attrs.lastModifiedTime();
        size = attrs.size();
        String text;
        try {
            text = new String(Files.readAllBytes(path), StandardCharsets.UTF_8);
        } catch (IOException | RuntimeException e) {
            size = -1; // try again at the next poll
            problem("cannot read it (" + e + ")");
            return false;
        }
        double newRate = rate;
        double newCost = costMs;
        String[] lines = text.split("\n", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            int hash = line.indexOf('#');
            if (hash >= 0) {
                line = line.substring(0, hash);
            }
            line = line.trim();
            if (line.isEmpty()) {
                continue;
            }
            int eq = line.indexOf('=');
            String key = eq < 0 ? line : line.substring(0, eq).trim();
            double value = eq < 0 ? Double.NaN : parse(line.substring(eq + 1).trim());
            if (Double.isNaN(value) || (!key.equals("rate") && !key.equals("cost-ms"))) {
                problem("line " + (i + 1) + " is not rate=<number >= 0> or cost-ms=<number >= 0>: " + lines[i].trim());
                return false;
            }
            if (key.equals("rate")) {
                newRate = value;
            } else {
                newCost = value;
            }
        }
        boolean changed = newRate != rate || newCost != costMs;
        if (problem != null || changed) {
            LOG.info("CountingJob load file {} ({}): rate={} cost-ms={}", path, who, newRate, newCost);
        }
        problem = null;
        rate = newRate;
        costMs = newCost;
        return changed;
    }

    /** A finite number >= 0, else NaN. */
    private static double parse(String s) {
        try {
            double d = Double.parseDouble(s);
            return Double.isFinite(d) && d >= 0 ? d : Double.NaN;
        } catch (NumberFormatException e) {
            return Double.NaN;
        }
    }

    private void problem(String what) {
        if (!what.equals(problem)) {
            LOG.warn(
                    "CountingJob load file {} ({}): {}; keeping rate={} cost-ms={}",
                    path, who, what, rate, costMs);
            problem = what;
        }
    }
}
