// Command loadgen: a closed-loop load client for etcd's v3 gRPC API, built on etcd's own Go client
// (go.etcd.io/etcd/clientv3, 3.4) the way etcd's tools/benchmark drives etcd: N gRPC connections
// (clientv3 clients, each over all the given endpoints with clientv3's round-robin balancer, or
// over the leader alone with -leader-only), C goroutines each keeping one request in flight, for a
// fixed time. Used by bench/go-grpc.bench.ts to measure etcd 3.4 and Baton's etcd facade side by
// side with a client that is not the bottleneck (its own CPU is reported).
//
// Built in GOPATH mode against Debian's packaged sources (golang-etcd-server-dev):
//
//	GO111MODULE=off GOPATH=$PRIVATE:/usr/share/gocode go build -o loadgen bench/go/loadgen/main.go
//
// Prints {"event":"start"} when the measured window opens, {"event":"end"} when it closes, then
// one JSON result line, on stdout. Bounded: at most 600 s, 4096 clients, loopback endpoints only.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/clientv3"
	"go.uber.org/zap"
)

type result struct {
	Workload       string   `json:"workload"`
	Endpoints      []string `json:"endpoints"`
	Conns          int      `json:"conns"`
	Clients        int      `json:"clients"`
	Seconds        float64  `json:"seconds"`
	Ops            int64    `json:"ops"`
	OpsPerSecond   float64  `json:"ops_per_s"`
	P50Ms          float64  `json:"p50_ms"`
	P99Ms          float64  `json:"p99_ms"`
	P999Ms         float64  `json:"p999_ms"`
	MaxMs          float64  `json:"max_ms"`
	Errors         int64    `json:"errors"`
	ErrorSamples   []string `json:"error_samples"`
	ClientCpuS     float64  `json:"client_cpu_s"`
	ClientCpuCores float64  `json:"client_cpu_cores"`
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "loadgen: "+format+"\n", args...)
	os.Exit(2)
}

func main() {
	endpointsFlag := flag.String("endpoints", "", "comma-separated HOST:PORT of the members (127.0.0.1 only)")
	workload := flag.String("workload", "put", "put | get (linearizable) | txn (a compare on the key's mod revision, then a put)")
	conns := flag.Int("conns", 8, "gRPC connections (clientv3 clients)")
	clients := flag.Int("clients", 16, "concurrent closed-loop clients")
	duration := flag.Duration("duration", 5*time.Second, "measured time")
	warmup := flag.Duration("warmup", time.Second, "unmeasured load before the measured window")
	keySpace := flag.Int("key-space", 1000, "keys are chosen at random among this many")
	valueBytes := flag.Int("value-bytes", 256, "value size of puts")
	prefix := flag.String("prefix", "/gobench/", "key prefix")
	leaderOnly := flag.Bool("leader-only", false, "send every request to the leader (found with Maintenance.Status)")
	followersOnly := flag.Bool("followers-only", false, "send every request to the members that are not the leader (every write forwarded)")
	timeout := flag.Duration("timeout", 10*time.Second, "per-request timeout")
	caFile := flag.String("cacert", "", "TLS: trust this CA (PEM); with -cert and -key, mutual TLS")
	certFile := flag.String("cert", "", "TLS: the client certificate (PEM)")
	keyFile := flag.String("key", "", "TLS: the client certificate's key (PEM)")
	flag.Parse()

	if *duration <= 0 || *duration+*warmup > 600*time.Second {
		fail("-duration must be > 0 and duration+warmup at most 600s")
	}
	if *clients < 1 || *clients > 4096 || *conns < 1 || *conns > 256 || *keySpace < 1 || *valueBytes < 0 || *valueBytes > 1<<20 {
		fail("out of bounds: 1 <= clients <= 4096, 1 <= conns <= 256, key-space >= 1, value-bytes <= 1 MiB")
	}
	if *workload != "put" && *workload != "get" && *workload != "txn" {
		fail("unknown -workload %q (put, get, txn)", *workload)
	}
	var endpoints []string
	for _, e := range strings.Split(*endpointsFlag, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		host, _, err := net.SplitHostPort(e)
		if err != nil || host != "127.0.0.1" {
			fail("endpoint %q: only 127.0.0.1:PORT endpoints are allowed", e)
		}
		endpoints = append(endpoints, e)
	}
	if len(endpoints) == 0 {
		fail("-endpoints is required")
	}

	quiet := &zap.Config{
		Level:            zap.NewAtomicLevelAt(zap.ErrorLevel),
		Encoding:         "json",
		EncoderConfig:    zap.NewProductionEncoderConfig(),
		OutputPaths:      []string{"stderr"},
		ErrorOutputPaths: []string{"stderr"},
	}
	tlsConfig := clientTLS(*caFile, *certFile, *keyFile)
	newClient := func(eps []string) *clientv3.Client {
		c, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 5 * time.Second, LogConfig: quiet, TLS: tlsConfig})
		if err != nil {
			fail("connect %v: %v", eps, err)
		}
		return c
	}

	if *leaderOnly && *followersOnly {
		fail("-leader-only and -followers-only exclude each other")
	}
	if *leaderOnly || *followersOnly {
		probe := newClient(endpoints)
		leader := ""
		for _, e := range endpoints {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			st, err := probe.Status(ctx, e)
			cancel()
			if err == nil && st.Header != nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				leader = e
				break
			}
		}
		probe.Close()
		if leader == "" {
			fail("no member of %v reports itself as leader", endpoints)
		}
		if *leaderOnly {
			endpoints = []string{leader}
		} else {
			var followers []string
			for _, e := range endpoints {
				if e != leader {
					followers = append(followers, e)
				}
			}
			if len(followers) == 0 {
				fail("no member of %v but the leader", endpoints)
			}
			endpoints = followers
		}
	}

	cs := make([]*clientv3.Client, *conns)
	for i := range cs {
		cs[i] = newClient(endpoints)
	}
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()

	value := strings.Repeat("v", *valueBytes)
	keyOf := func(n int) string { return fmt.Sprintf("%s%08d", *prefix, n) }

	// Connect every connection, and for gets create the whole key space first.
	{
		var wg sync.WaitGroup
		errs := make(chan error, *keySpace+*conns)
		sem := make(chan struct{}, 64)
		count := *conns
		if *workload == "get" && *keySpace > count {
			count = *keySpace
		}
		for n := 0; n < count; n++ {
			wg.Add(1)
			sem <- struct{}{}
			go func(n int) {
				defer wg.Done()
				defer func() { <-sem }()
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				defer cancel()
				if _, err := cs[n%len(cs)].Put(ctx, keyOf(n%*keySpace), value); err != nil {
					errs <- err
				}
			}(n)
		}
		wg.Wait()
		close(errs)
		if err, ok := <-errs; ok {
			fail("setup put: %v", err)
		}
	}

	var (
		ops        int64
		errCount   int64
		samplesMu  sync.Mutex
		samples    = map[string]bool{}
		latencies  = make([][]time.Duration, *clients)
		wg         sync.WaitGroup
		start      = time.Now()
		measureAt  = start.Add(*warmup)
		stopAt     = measureAt.Add(*duration)
		cpuAtStart float64
	)
	for i := 0; i < *clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c := cs[i%len(cs)]
			rng := rand.New(rand.NewSource(int64(i) + time.Now().UnixNano()))
			lat := make([]time.Duration, 0, 4096)
			for {
				now := time.Now()
				if !now.Before(stopAt) {
					break
				}
				key := keyOf(rng.Intn(*keySpace))
				ctx, cancel := context.WithTimeout(context.Background(), *timeout)
				var err error
				switch *workload {
				case "put":
					_, err = c.Put(ctx, key, value)
				case "get":
					_, err = c.Get(ctx, key) // linearizable: clientv3's default
				case "txn":
					_, err = c.Txn(ctx).
						If(clientv3.Compare(clientv3.ModRevision(key), "<", int64(1)<<52)). // always true here: a compare, then a put
						Then(clientv3.OpPut(key, value)).
						Commit()
				}
				cancel()
				took := time.Since(now)
				// Counted: requests sent inside the measured window, whenever they complete.
				if !now.Before(measureAt) {
					if err != nil {
						atomic.AddInt64(&errCount, 1)
						samplesMu.Lock()
						if len(samples) < 5 {
							samples[err.Error()] = true
						}
						samplesMu.Unlock()
					} else {
						atomic.AddInt64(&ops, 1)
						lat = append(lat, took)
					}
				}
			}
			latencies[i] = lat
		}(i)
	}
	time.Sleep(time.Until(measureAt))
	cpuAtStart = cpuSeconds()
	windowStart := time.Now()
	fmt.Println(`{"event":"start"}`)
	wg.Wait()
	// Throughput over the nominal window (requests sent in it); CPU over the window and its tail.
	cpuWindow := time.Since(windowStart).Seconds()
	cpu := cpuSeconds() - cpuAtStart
	elapsed := duration.Seconds()
	fmt.Println(`{"event":"end"}`)

	var all []time.Duration
	for _, l := range latencies {
		all = append(all, l...)
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	pct := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		idx := int(p * float64(len(all)-1))
		return float64(all[idx].Microseconds()) / 1000
	}
	errorSamples := []string{}
	for s := range samples {
		errorSamples = append(errorSamples, s)
	}
	sort.Strings(errorSamples)
	r := result{
		Workload:       *workload,
		Endpoints:      endpoints,
		Conns:          *conns,
		Clients:        *clients,
		Seconds:        elapsed,
		Ops:            ops,
		OpsPerSecond:   float64(ops) / elapsed,
		P50Ms:          pct(0.50),
		P99Ms:          pct(0.99),
		P999Ms:         pct(0.999),
		MaxMs:          pct(1),
		Errors:         errCount,
		ErrorSamples:   errorSamples,
		ClientCpuS:     cpu,
		ClientCpuCores: cpu / cpuWindow,
	}
	out, _ := json.Marshal(r)
	fmt.Println(string(out))
}

// clientTLS: nil (plaintext) without -cacert; otherwise TLS 1.2+ trusting that CA, presenting the
// client certificate when -cert and -key are given (the servers require one with client-cert-auth).
func clientTLS(caFile, certFile, keyFile string) *tls.Config {
	if caFile == "" {
		if certFile != "" || keyFile != "" {
			fail("-cert and -key need -cacert")
		}
		return nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		fail("-cacert: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		fail("-cacert %s: no PEM certificate in it", caFile)
	}
	config := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" || keyFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			fail("-cert/-key: %v", err)
		}
		config.Certificates = []tls.Certificate{pair}
	}
	return config
}
