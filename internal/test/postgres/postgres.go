// Package postgres runs a real PostgreSQL server for tests: Debian's
// postgresql package (initdb and postgres under /usr/lib/postgresql/<major>/bin,
// installed by .ci/run), in a temporary directory, listening on a Unix
// socket only, stopped when the test ends, also when it fails.
//
// PostgreSQL refuses to run as root. When the test runs as root (as in CI
// containers), the server runs as the unprivileged user nobody (uid and gid
// 65534) through the process credential Go sets before exec; its directory
// is made that user's. Otherwise it runs as the test's own user.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// nobody is the uid and gid the server runs as when the test is root.
const nobody = 65534

// port names the socket file (.s.PGSQL.<port>); nothing listens on TCP.
const port = 5432

// Server is one PostgreSQL server of a test.
type Server struct {
	t       testing.TB
	bin     string
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	logPath string
}

// binDir returns the newest /usr/lib/postgresql/<major>/bin holding
// postgres, or PG_BIN when set.
func binDir() (string, error) {
	if dir := os.Getenv("PG_BIN"); dir != "" {
		return dir, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(matches) == 0 {
		return "", errors.New("no PostgreSQL server found under /usr/lib/postgresql (install Debian's postgresql package, as .ci/run does, or set PG_BIN)")
	}
	sort.Strings(matches)
	return filepath.Dir(matches[len(matches)-1]), nil
}

// Start initialises a database cluster in a temporary directory and starts
// the server; the test's cleanup stops it and removes the directory. With
// CI set a missing PostgreSQL fails the test, otherwise it skips it.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	// Note: a short path, since a Unix socket path is limited to 107 bytes,
	// readable by nobody, which t.TempDir's 0700 parents are not.
	dir, err := os.MkdirTemp("", "canopy-pg-")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, bin: bin, dir: dir, logPath: filepath.Join(dir, "postgres.log")}
	t.Cleanup(func() {
		s.Stop()
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	if err := os.Chmod(dir, 0o755); err != nil { //nolint:gosec // the server may run as nobody: it must reach its data directory under dir
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(dir, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	initdb := s.command("initdb", "-D", s.dataDir(), "-U", "canopy", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	s.Restart()
	return s
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

// command returns a command of PostgreSQL's bin directory, run as nobody
// when the test is root.
func (s *Server) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.bin, name), args...) //nolint:gosec // test harness
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// URL returns the URL of the database postgres on s, for pgx and for the
// hub's --history-database.
func (s *Server) URL() string {
	return s.DatabaseURL("postgres")
}

// DatabaseURL returns the URL of database db on s.
func (s *Server) DatabaseURL(db string) string {
	return fmt.Sprintf("postgres://canopy@/%s?host=%s&port=%d&sslmode=disable", db, s.dir, port)
}

// CreateDatabase creates database db on s and returns its URL.
func (s *Server) CreateDatabase(db string) string {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.URL())
	if err != nil {
		s.t.Fatal(err)
	}
	defer func() { _ = conn.Close(ctx) }() // Note: nothing to do about a failed close of a test connection
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
		s.t.Fatal(err)
	}
	return s.DatabaseURL(db)
}

// Restart starts the server when it is stopped and waits until it accepts
// connections.
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil {
		return
	}
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := s.command("postgres", "-D", s.dataDir(), "-k", s.dir, "-p", fmt.Sprint(port),
		"-c", "listen_addresses=", "-c", "fsync=off", "-c", "max_connections=50")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		s.t.Fatalf("starting postgres: %v", err)
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(exited)
	}(s.exited)
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL())
		if err == nil {
			_ = conn.Close(ctx)
			cancel()
			return
		}
		cancel()
		select {
		case <-s.exited:
			s.cmd = nil
			s.t.Fatalf("postgres exited at start:\n%s", s.log())
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("postgres did not accept connections in 60s: %v\n%s", err, s.log())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop stops the server (fast shutdown: open connections are closed) and
// waits until it has exited; a stopped server stays stopped.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	s.cmd = nil
}

// log returns the server's log.
func (s *Server) log() string {
	b, _ := os.ReadFile(s.logPath)
	return strings.TrimSpace(string(b))
}
