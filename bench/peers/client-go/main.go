// The peer of the `client` benchmark (bench/proxy): Go's net/http client
// doing what Braid's client does there. CONNECTIONS goroutines each GET URL
// in a loop, over keep-alive connections (one per goroutine at most), reading
// each body whole, for SECONDS; then it prints "REQUESTS CPU_SECONDS" (its
// own user+system time, getrusage) and exits 0, or 1 at the first error.
//
// Usage: client-go URL CONNECTIONS SECONDS
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: client-go URL CONNECTIONS SECONDS")
		os.Exit(2)
	}
	url := os.Args[1]
	connections, _ := strconv.Atoi(os.Args[2])
	seconds, _ := strconv.ParseFloat(os.Args[3], 64)
	transport := &http.Transport{
		MaxIdleConns:        connections,
		MaxIdleConnsPerHost: connections,
		MaxConnsPerHost:     connections,
		DisableCompression:  true,
	}
	client := &http.Client{Transport: transport}
	deadline := time.Now().Add(time.Duration(seconds * float64(time.Second)))
	var requests atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for i := 0; i < connections; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				resp, err := client.Get(url)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != 200 {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					failed.Store(err.Error())
					return
				}
				requests.Add(1)
			}
		}()
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		fmt.Fprintln(os.Stderr, "client-go:", e)
		os.Exit(1)
	}
	var usage syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &usage)
	cpu := float64(usage.Utime.Sec+usage.Stime.Sec) +
		float64(usage.Utime.Usec+usage.Stime.Usec)/1e6
	fmt.Printf("%d %.6f\n", requests.Load(), cpu)
}
