package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"
)

// Environment of a worker process StartWorkers starts: a program that
// imports this package and is started with WorkerURLEnv set runs a
// worker connected to that URL, before its main, until it is signalled
// (SIGTERM, SIGINT) or its parent ends, and exits.
const (
	WorkerURLEnv    = "LOOM_CLUSTER_WORKER"
	workerTargetEnv = "LOOM_CLUSTER_WORKER_TARGET"
	workerCacheEnv  = "LOOM_CLUSTER_WORKER_CACHE"
	workerBuildsEnv = "LOOM_CLUSTER_WORKER_BUILDS"
	workerLogEnv    = "LOOM_CLUSTER_WORKER_LOG" // set: a line per job on stderr
	// The Security of the workers, file names, one variable each.
	workerCredsEnv = "LOOM_CLUSTER_WORKER_CREDS"
	workerNKeyEnv  = "LOOM_CLUSTER_WORKER_NKEY"
	workerCAEnv    = "LOOM_CLUSTER_WORKER_TLS_CA"
	workerCertEnv  = "LOOM_CLUSTER_WORKER_TLS_CERT"
	workerKeyEnv   = "LOOM_CLUSTER_WORKER_TLS_KEY"
)

func init() {
	url := os.Getenv(WorkerURLEnv)
	if url == "" {
		return
	}
	builds, _ := strconv.Atoi(os.Getenv(workerBuildsEnv))
	w := &Worker{Target: os.Getenv(workerTargetEnv), CacheDir: os.Getenv(workerCacheEnv), Builds: builds}
	if os.Getenv(workerLogEnv) != "" {
		w.Log = os.Stderr
	}
	sec := Security{Creds: os.Getenv(workerCredsEnv), NKey: os.Getenv(workerNKeyEnv), CA: os.Getenv(workerCAEnv), Cert: os.Getenv(workerCertEnv), Key: os.Getenv(workerKeyEnv)}
	if err := ServeWorker(url, sec, w); err != nil {
		fmt.Fprintln(os.Stderr, "loom worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// ServeWorker connects to url with sec and runs w until the process is
// signalled (SIGINT, SIGTERM): the body of `loom worker`. Its jobs in
// hand when it stops go back to the queue.
func ServeWorker(url string, sec Security, w *Worker) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := w.defaults(); err != nil {
		return err
	}
	nc, err := Connect(url, "loom worker "+w.Name, sec)
	if err != nil {
		return err
	}
	defer nc.Close()
	defer w.Close()
	err = w.Run(ctx, nc)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// LocalWorkers say how StartWorkers starts workers on this machine.
type LocalWorkers struct {
	Target   string // "": DefaultTarget()
	CacheDir string // "": loom's cache directory
	// Builds is how many builds each runs at once; 0: the machine's cores
	// shared among the workers.
	Builds int
	// Command is the program started (it must import this package); nil:
	// this one.
	Command []string
	Env     []string // added to their environment
	// Security is how they connect (the URL's user and password, if any,
	// go with the URL).
	Security Security
}

// StartWorkers starts n worker processes on this machine connected to
// url (see WorkerURLEnv); they end when stop is called or this process
// ends, kill -9 included.
func StartWorkers(url string, n int, o LocalWorkers) (stop func(), err error) {
	cmdline := o.Command
	if cmdline == nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cmdline = []string{exe}
	}
	builds := o.Builds
	if builds <= 0 {
		builds = max(1, runtime.NumCPU()/max(n, 1))
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			c.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range cmds {
			done := make(chan struct{})
			go func() { c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				c.Process.Kill()
				<-done
			}
		}
	}
	for i := range n {
		c := exec.Command(cmdline[0], cmdline[1:]...)
		c.Env = append(os.Environ(), o.Env...)
		c.Env = append(c.Env, WorkerURLEnv+"="+url, workerTargetEnv+"="+o.Target, workerCacheEnv+"="+o.CacheDir,
			workerBuildsEnv+"="+strconv.Itoa(builds), workerCredsEnv+"="+o.Security.Creds, workerNKeyEnv+"="+o.Security.NKey,
			workerCAEnv+"="+o.Security.CA, workerCertEnv+"="+o.Security.Cert, workerKeyEnv+"="+o.Security.Key)
		c.Stderr = os.Stderr
		setParentDeath(c)
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("cluster: starting local worker %d: %w", i+1, err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}
