package main

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// takeTerminal makes this process the terminal's foreground process group
// when it was started in the foreground (by `make run`), so that Ctrl-C
// interrupts only this command, which then stops everything cleanly and exits
// 0. Without it the terminal also sends SIGINT to make, which always dies of
// it ("make: *** ... Interrupt", exit 130) whatever its recipe returns. The
// returned function gives the terminal back. It does nothing without a
// terminal (CI, tests) or when started in the background.
func takeTerminal() (restore func()) {
	restore = func() {}
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return restore
	}
	foreground, err := tcgetpgrp(tty.Fd())
	if err != nil || foreground != syscall.Getpgrp() {
		tty.Close()
		return restore
	}
	// A background process group writing the terminal's settings gets
	// SIGTTOU; we are about to become the foreground, and later give it back.
	signal.Ignore(syscall.SIGTTOU)
	if err := syscall.Setpgid(0, 0); err != nil {
		tty.Close()
		return restore
	}
	if err := tcsetpgrp(tty.Fd(), syscall.Getpid()); err != nil {
		tty.Close()
		return restore
	}
	return func() {
		tcsetpgrp(tty.Fd(), foreground)
		tty.Close()
	}
}

func tcgetpgrp(fd uintptr) (int, error) {
	var pgid int32
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgid))); errno != 0 {
		return 0, errno
	}
	return int(pgid), nil
}

func tcsetpgrp(fd uintptr, pgid int) error {
	p := int32(pgid)
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&p))); errno != 0 {
		return errno
	}
	return nil
}
