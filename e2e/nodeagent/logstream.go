package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// logOptions are the kubelet's containerLogs query parameters that the agent
// implements.
type logOptions struct {
	follow, previous bool
	tailLines        int64 // the last lines only; all when negative
	limitBytes       int64 // at most this many bytes; no limit when negative
}

// streamLog writes run rl's output, read from f (rl.path), to w: the last
// opts.tailLines lines (counted when the request comes), at most
// opts.limitBytes bytes in all; with opts.follow it then polls every poll
// for more until the run ends (what it wrote until then included) or ctx
// ends. flush pushes what was written to the client. f is read without any
// lock: the process appends to it, nothing else writes it.
func streamLog(ctx context.Context, w io.Writer, flush func(), f *os.File, rl *runLog, opts logOptions, poll time.Duration) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	start := min(rl.start, fi.Size())
	if opts.tailLines >= 0 {
		if start, err = tailStart(f, start, fi.Size(), opts.tailLines); err != nil {
			return fmt.Errorf("tail %s: %w", rl.path, err)
		}
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return err
	}
	var limit *limitWriter
	if opts.limitBytes >= 0 {
		limit = &limitWriter{w: w, left: opts.limitBytes}
		w = limit
	}
	for {
		// Checked before reading: once the run has ended, its file is
		// complete, so this read gets the rest.
		ended := isClosed(rl.ended)
		_, err := io.Copy(w, f)
		if errors.Is(err, errLimitReached) || (limit != nil && limit.left == 0) {
			flush()
			return nil
		}
		if err != nil {
			return err
		}
		flush()
		if !opts.follow || ended {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-rl.ended:
		case <-time.After(poll):
		}
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// tailStart returns where the last n lines of f[from:size] begin. A last
// line without its newline counts as a line.
func tailStart(f io.ReaderAt, from, size, n int64) (int64, error) {
	if n == 0 {
		return size, nil
	}
	buf := make([]byte, 32<<10)
	var newlines int64
	for pos := size; pos > from; {
		m := min(int64(len(buf)), pos-from)
		pos -= m
		if _, err := f.ReadAt(buf[:m], pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := m - 1; i >= 0; i-- {
			// The final newline ends the last line rather than
			// beginning another.
			if buf[i] != '\n' || pos+i == size-1 {
				continue
			}
			if newlines++; newlines == n {
				return pos + i + 1, nil
			}
		}
	}
	return from, nil
}

var errLimitReached = errors.New("limitBytes reached")

// limitWriter passes on the first left bytes, then fails with
// errLimitReached.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left <= 0 {
		return 0, errLimitReached
	}
	cut := false
	if int64(len(p)) > l.left {
		p, cut = p[:l.left], true
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err == nil && cut {
		err = errLimitReached
	}
	return n, err
}
