// Command go-gorilla-peer is a fan-out WebSocket server built the way a Go team would
// build it with gorilla/websocket: one goroutine pair per client, a per-client channel
// of 64 messages that drops when full, a 1 s write deadline, and one PreparedMessage per
// round shared by every client. It speaks rtcheck's payload and control protocol so that
// `rtcheck bench fanout --server` measures it with the same load generator as rtcheck's
// own server (see README.md next to this file).
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gorilla/websocket"
)

type config struct {
	listen         string
	addrFile       string
	rate           float64
	size           int
	rounds         uint64
	queue          int
	writeDeadline  time.Duration
	ping           time.Duration
	pongWait       time.Duration
	maxMessage     int64
	maxTime        time.Duration
	exitWithParent bool
}

func parseFlags() config {
	var c config
	flag.StringVar(&c.listen, "listen", "127.0.0.1:8080", "loopback address to listen on (port 0 picks a free one)")
	flag.StringVar(&c.addrFile, "addr-file", "", "write HOST:PORT here (atomically) once listening")
	flag.Float64Var(&c.rate, "rate", 5, "rounds per second (must match bench fanout --rate)")
	flag.IntVar(&c.size, "size", 1024, "payload bytes per message, at least 16 (must match bench fanout --size)")
	flag.Uint64Var(&c.rounds, "rounds", 100, "rounds to publish unless POST /control/start?rounds=N says otherwise")
	flag.IntVar(&c.queue, "queue", 64, "per-client channel capacity; a full channel drops the message")
	flag.DurationVar(&c.writeDeadline, "write-deadline", time.Second, "a write taking longer removes the client")
	flag.DurationVar(&c.ping, "ping", 20*time.Second, "WebSocket ping interval")
	flag.DurationVar(&c.pongWait, "pong-wait", 30*time.Second, "a client silent this long is removed")
	flag.Int64Var(&c.maxMessage, "max-message", 64<<10, "largest inbound message")
	flag.DurationVar(&c.maxTime, "max-time", time.Hour, "exit by itself after this long, whatever happens")
	flag.BoolVar(&c.exitWithParent, "exit-with-parent", false, "exit when the parent process goes away")
	flag.Parse()
	return c
}

func fail(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "go-gorilla-peer: "+format+"\n", a...)
	os.Exit(2)
}

func (c config) validate() {
	if c.size < 16 || c.size > 1<<20 {
		fail("-size %d: must be 16..1048576 (seq and timestamp need 16 bytes)", c.size)
	}
	if !(c.rate > 0 && c.rate <= 1000) {
		fail("-rate %v: must be in (0, 1000]", c.rate)
	}
	if c.queue < 1 || c.rounds < 1 || c.maxTime <= 0 {
		fail("-queue, -rounds and -max-time must be positive")
	}
	host, _, err := net.SplitHostPort(c.listen)
	if err != nil {
		fail("-listen %s: %v", c.listen, err)
	}
	// The control endpoints have no authentication: loopback only.
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		fail("-listen %s: only loopback addresses (127.0.0.0/8, ::1); /control/start has no authentication", c.listen)
	}
}

// client is one WebSocket connection: the hub offers it messages on send; its writer
// goroutine owns every write, its reader goroutine every read.
type client struct {
	conn *websocket.Conn
	send chan *websocket.PreparedMessage
	done chan struct{}
	once sync.Once
}

type hub struct {
	cfg     config
	mu      sync.Mutex
	clients map[*client]struct{}
	// Clients the server removed (deadline, pong timeout): each misses every later round.
	removedClients uint64

	roundsSent, roundsTotal, publishStart    atomic.Uint64
	drops, removed, missed, maxDepth, wsSent atomic.Uint64
	nodelayChecked, nodelayOff               atomic.Uint64
	closedPeer, closedDeadline, closedPong   atomic.Uint64
	closedBadInput, closedShutdown           atomic.Uint64
	started, finished                        atomic.Bool
	hubMu                                    sync.Mutex
	hubRoundMs                               []float64
	start                                    chan uint64
}

func newHub(cfg config) *hub {
	h := &hub{cfg: cfg, clients: map[*client]struct{}{}, start: make(chan uint64, 1)}
	h.roundsTotal.Store(cfg.rounds)
	return h
}

// payload is rtcheck's binary format: u64 LE seq, u64 LE scheduled send time (ns since
// the epoch), zero padding to size.
func payload(size int, seq, schedNs uint64) []byte {
	b := make([]byte, size)
	binary.LittleEndian.PutUint64(b[0:8], seq)
	binary.LittleEndian.PutUint64(b[8:16], schedNs)
	return b
}

// publish waits for POST /control/start, then sends round seq at start + (seq-1)/rate,
// stamped with that scheduled time (a late round goes out at once, still carrying its
// schedule, so a stalled hub shows in full in the latencies).
func (h *hub) publish(stop <-chan struct{}) {
	var rounds uint64
	select {
	case rounds = <-h.start:
	case <-stop:
		return
	}
	h.roundsTotal.Store(rounds)
	period := time.Duration(float64(time.Second) / h.cfg.rate)
	t0 := time.Now()
	startNs := uint64(t0.UnixNano())
	h.publishStart.Store(startNs)
	for seq := uint64(1); seq <= rounds; seq++ {
		offset := time.Duration(seq-1) * period
		if d := time.Until(t0.Add(offset)); d > 0 {
			select {
			case <-time.After(d):
			case <-stop:
				return
			}
		}
		pm, err := websocket.NewPreparedMessage(websocket.BinaryMessage,
			payload(h.cfg.size, seq, startNs+uint64(offset)))
		if err != nil {
			fail("prepare message: %v", err)
		}
		h.offerAll(pm)
		h.roundsSent.Store(seq)
	}
	h.finished.Store(true)
}

// offerAll hands one round to every client without blocking: a full channel drops it.
func (h *hub) offerAll(pm *websocket.PreparedMessage) {
	t := time.Now()
	h.mu.Lock()
	for c := range h.clients {
		select {
		case c.send <- pm:
			if d := uint64(len(c.send)); d > h.maxDepth.Load() {
				h.maxDepth.Store(d)
			}
		default:
			h.drops.Add(1)
		}
	}
	h.missed.Add(h.removedClients)
	h.mu.Unlock()
	ms := float64(time.Since(t).Nanoseconds()) / 1e6
	h.hubMu.Lock()
	h.hubRoundMs = append(h.hubRoundMs, ms)
	h.hubMu.Unlock()
}

// drop unregisters c once. byServer: the server removed it (deadline, pong timeout), so
// what was queued plus every later round counts in missed_by_removed.
func (h *hub) drop(c *client, reason *atomic.Uint64, byServer bool, inFlight uint64) {
	c.once.Do(func() {
		h.mu.Lock()
		delete(h.clients, c)
		if byServer {
			h.removedClients++
			h.removed.Add(1)
			h.missed.Add(uint64(len(c.send)) + inFlight)
		}
		h.mu.Unlock()
		reason.Add(1)
		close(c.done)
		c.conn.Close()
	})
}

func (h *hub) writer(c *client) {
	ping := time.NewTicker(h.cfg.ping)
	defer ping.Stop()
	for {
		select {
		case pm := <-c.send:
			c.conn.SetWriteDeadline(time.Now().Add(h.cfg.writeDeadline))
			if err := c.conn.WritePreparedMessage(pm); err != nil {
				h.writeFailed(c, err)
				return
			}
			h.wsSent.Add(1)
		case <-ping.C:
			c.conn.SetWriteDeadline(time.Now().Add(h.cfg.writeDeadline))
			if err := c.conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				h.writeFailed(c, err)
				return
			}
		case <-c.done:
			return
		}
	}
}

func (h *hub) writeFailed(c *client, err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		h.drop(c, &h.closedDeadline, true, 1)
	} else {
		h.drop(c, &h.closedPeer, false, 0)
	}
}

func (h *hub) reader(c *client) {
	c.conn.SetReadLimit(h.cfg.maxMessage)
	c.conn.SetReadDeadline(time.Now().Add(h.cfg.pongWait))
	c.conn.SetPongHandler(func(string) error {
		return c.conn.SetReadDeadline(time.Now().Add(h.cfg.pongWait))
	})
	for {
		_, r, err := c.conn.NextReader()
		if err == nil {
			_, err = io.Copy(io.Discard, r)
		}
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				h.drop(c, &h.closedPong, true, 0)
			case errors.Is(err, websocket.ErrReadLimit):
				h.drop(c, &h.closedBadInput, false, 0)
			default:
				var ce *websocket.CloseError
				if errors.As(err, &ce) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					h.drop(c, &h.closedPeer, false, 0)
				} else {
					h.drop(c, &h.closedBadInput, false, 0)
				}
			}
			return
		}
	}
}

// nodelay reads TCP_NODELAY back from the kernel (Go sets it by default; this checks).
func (h *hub) nodelay(conn net.Conn) {
	tc, ok := conn.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
		if err == nil {
			h.nodelayChecked.Add(1)
			if v == 0 {
				h.nodelayOff.Add(1)
			}
		}
	})
}

var upgrader = websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024}

func (h *hub) serveWS(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade has answered with an HTTP error
	}
	h.nodelay(conn.UnderlyingConn())
	c := &client{conn: conn, send: make(chan *websocket.PreparedMessage, h.cfg.queue), done: make(chan struct{})}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	go h.writer(c)
	go h.reader(c)
}

func (h *hub) serveStart(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rounds := h.cfg.rounds
	if q := r.URL.Query().Get("rounds"); q != "" {
		n, err := strconv.ParseUint(q, 10, 64)
		if err != nil || n == 0 || n > 1_000_000 {
			http.Error(w, "rounds must be an integer in 1..1000000", http.StatusBadRequest)
			return
		}
		rounds = n
	}
	if !h.started.CompareAndSwap(false, true) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusConflict)
		io.WriteString(w, `{"started":false,"error":"already started"}`)
		return
	}
	// Stored before answering: stats read right after the 200 must show the rounds asked
	// for, not the -rounds default the publisher goroutine has yet to replace.
	h.roundsTotal.Store(rounds)
	h.start <- rounds
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"started":true}`)
}

// stats is the JSON rtcheck's /control/stats has, so bench can account for every sample.
func (h *hub) stats() map[string]interface{} {
	h.mu.Lock()
	n := len(h.clients)
	h.mu.Unlock()
	h.hubMu.Lock()
	hubMs := append([]float64{}, h.hubRoundMs...)
	h.hubMu.Unlock()
	var nodelay interface{}
	if h.nodelayChecked.Load() > 0 {
		nodelay = h.nodelayOff.Load() == 0
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	cpu := float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	fds, _ := os.ReadDir("/proc/self/fd")
	sent := map[string]uint64{"ws": h.wsSent.Load(), "sse": 0, "poll": 0, "raw": 0}
	clients := map[string]int{"ws": n, "sse": 0, "poll": 0, "raw": 0}
	return map[string]interface{}{
		"rounds_sent":       h.roundsSent.Load(),
		"rounds_total":      h.roundsTotal.Load(),
		"hub_round_ms":      hubMs,
		"publish_start_ns":  h.publishStart.Load(),
		"drops":             h.drops.Load(),
		"removed":           h.removed.Load(),
		"missed_by_removed": h.missed.Load(),
		"clients":           clients,
		"max_queue_depth":   h.maxDepth.Load(),
		"rss_bytes":         rssBytes(),
		"cpu_seconds":       cpu,
		"nodelay":           nodelay,
		"open_fds":          len(fds),
		"finished":          h.finished.Load(),
		"messages_sent":     sent,
		"closed": map[string]uint64{
			"peer": h.closedPeer.Load(), "write_deadline": h.closedDeadline.Load(),
			"pong_timeout": h.closedPong.Load(), "bad_input": h.closedBadInput.Load(),
			"shutdown": h.closedShutdown.Load(),
		},
	}
}

func rssBytes() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// closeAll sends close 1001 to every client (best effort, bounded by a short deadline).
func (h *hub) closeAll() int {
	h.mu.Lock()
	cs := make([]*client, 0, len(h.clients))
	for c := range h.clients {
		cs = append(cs, c)
	}
	h.mu.Unlock()
	msg := websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down")
	for _, c := range cs {
		c.conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(100*time.Millisecond))
		h.drop(c, &h.closedShutdown, false, 0)
	}
	return len(cs)
}

func writeAddrFile(path, addr string) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(addr+"\n"), 0o644); err != nil {
		fail("%s: %v", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		fail("%s: %v", path, err)
	}
}

func main() {
	cfg := parseFlags()
	cfg.validate()
	h := newHub(cfg)
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		fail("-listen %s: %v", cfg.listen, err)
	}
	addr := ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", h.serveWS)
	mux.HandleFunc("/control/start", h.serveStart)
	mux.HandleFunc("/control/stats", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h.stats())
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	stop := make(chan struct{})
	go h.publish(stop)
	go srv.Serve(ln)
	var lim syscall.Rlimit
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	fmt.Fprintf(os.Stderr, "go-gorilla-peer listening on ws://%s/ws (control: /control/start, /control/stats)\n", addr)
	fmt.Fprintf(os.Stderr, "  %d B at %v/s, %d rounds (unless /control/start?rounds=N) after POST /control/start; chan %d + drop, write deadline %v, PreparedMessage; open files soft %d hard %d\n",
		cfg.size, cfg.rate, cfg.rounds, cfg.queue, cfg.writeDeadline, lim.Cur, lim.Max)
	if cfg.addrFile != "" {
		writeAddrFile(cfg.addrFile, addr)
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	why := waitForEnd(cfg, sig)
	close(stop)
	ln.Close()
	n := h.closeAll()
	fmt.Fprintf(os.Stderr, "go-gorilla-peer: %s: closed %d client(s); %d round(s) sent, drops %d, removed %d\n",
		why, n, h.roundsSent.Load(), h.drops.Load(), h.removed.Load())
}

// waitForEnd returns why the server stops: a signal, the time bound, or the parent gone.
func waitForEnd(cfg config, sig <-chan os.Signal) string {
	bound := time.After(cfg.maxTime)
	parent := os.Getppid()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case s := <-sig:
			return s.String()
		case <-bound:
			return fmt.Sprintf("time bound %v reached", cfg.maxTime)
		case <-tick.C:
			if cfg.exitWithParent && os.Getppid() != parent {
				return "parent process gone"
			}
		}
	}
}
