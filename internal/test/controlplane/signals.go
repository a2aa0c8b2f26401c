package controlplane

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// live holds the stop functions of the environments and control planes of
// this process, so that an interrupt (Ctrl-C, SIGTERM from a CI runner) stops
// them cleanly and removes their state before the process dies. It handles
// the signals only while something runs.
var live struct {
	sync.Mutex
	stops map[any]func() error
	sigs  chan os.Signal
	// callerHandlesSignals is set by LeaveSignalsToCaller.
	callerHandlesSignals bool
}

// LeaveSignalsToCaller tells the package not to act on SIGINT and SIGTERM:
// the calling program (the demo, say) cancels its own work on a signal and
// calls Stop itself. The parent-death guard still stops the control planes
// if the program dies without stopping them.
func LeaveSignalsToCaller() {
	live.Lock()
	defer live.Unlock()
	live.callerHandlesSignals = true
}

// Track makes SIGINT and SIGTERM call stop before the process dies of the
// signal, until Untrack(key); key is the pointer of what stop stops. Every
// control plane tracks itself; a caller that runs more (an Env, say) tracks
// its own Stop too, so that the signal stops everything at once.
func Track(key any, stop func() error) {
	live.Lock()
	defer live.Unlock()
	if live.stops == nil {
		live.stops = map[any]func() error{}
	}
	if len(live.stops) == 0 && !live.callerHandlesSignals {
		live.sigs = make(chan os.Signal, 1)
		signal.Notify(live.sigs, os.Interrupt, syscall.SIGTERM)
		go onSignal(live.sigs)
	}
	live.stops[key] = stop
}

// Untrack undoes Track(key); Stop methods call it.
func Untrack(key any) {
	live.Lock()
	defer live.Unlock()
	if _, ok := live.stops[key]; !ok {
		return
	}
	delete(live.stops, key)
	if len(live.stops) == 0 && live.sigs != nil {
		signal.Stop(live.sigs)
		close(live.sigs)
		live.sigs = nil
	}
}

func onSignal(sigs chan os.Signal) {
	sig, ok := <-sigs
	if !ok {
		return
	}
	live.Lock()
	stops := make([]func() error, 0, len(live.stops))
	for _, stop := range live.stops {
		stops = append(stops, stop)
	}
	live.Unlock() // stop untracks
	var wg sync.WaitGroup
	for _, stop := range stops {
		wg.Go(func() { _ = stop() })
	}
	wg.Wait()
	// Die of the signal as if it had not been caught.
	signal.Reset(sig)
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(os.Getpid(), s)
		time.Sleep(time.Second) // delivery is asynchronous; exiting first would hide the signal
	}
	os.Exit(1)
}
