// Command web-bench measures the explorer's first page in headless
// Chromium against a running node (make run): the bytes transferred
// (document, assets and API answers, as the browser's Resource Timing
// counts them) and the time from navigation start to a rendered list
// (the page's "attestd:list-rendered" mark). Each cold run uses a fresh
// browser profile (empty cache); the warm run opens the page again in the
// last profile, as a returning visitor would.
//
//	make run &                      # in another terminal
//	go run ./bench/web -url http://127.0.0.1:8080/ -runs 7
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"time"

	"github.com/chromedp/chromedp"
)

type sample struct {
	bytes    float64
	requests int
	rendered float64 // ms after navigation start
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/", "the explorer's address (a running node)")
	runs := flag.Int("runs", 7, "cold runs (a fresh profile each)")
	flag.Parse()
	path, err := exec.LookPath("chromium")
	if err != nil {
		fmt.Fprintln(os.Stderr, "web-bench needs Chromium: apt-get install -y chromium")
		os.Exit(2)
	}
	var cold []sample
	var warm sample
	for i := 0; i < *runs; i++ {
		s, w, err := run(path, *url, i == *runs-1)
		if err != nil {
			fmt.Fprintln(os.Stderr, "web-bench:", err)
			os.Exit(1)
		}
		cold = append(cold, s)
		if i == *runs-1 {
			warm = w
		}
	}
	slices.SortFunc(cold, func(a, b sample) int { return int(a.rendered - b.rendered) })
	med := cold[len(cold)/2]
	fmt.Printf("explorer first page at %s, headless Chromium, %d cold runs\n", *url, *runs)
	fmt.Printf("| visit | requests | bytes transferred | list rendered after |\n|---|---|---|---|\n")
	fmt.Printf("| cold (median) | %d | %.0f | %.0f ms (min %.0f, max %.0f) |\n", med.requests, med.bytes, med.rendered,
		cold[0].rendered, cold[len(cold)-1].rendered)
	fmt.Printf("| warm (same profile) | %d | %.0f | %.0f ms |\n", warm.requests, warm.bytes, warm.rendered)
}

// run opens the page in a fresh profile, and again when warmToo.
func run(path, url string, warmToo bool) (cold, warm sample, err error) {
	dir, err := os.MkdirTemp("", "web-bench-")
	if err != nil {
		return cold, warm, err
	}
	defer os.RemoveAll(dir)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1200, 900), chromedp.UserDataDir(dir))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()
	if cold, err = measure(ctx, url); err != nil || !warmToo {
		return cold, warm, err
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return cold, warm, err
	}
	warm, err = measure(ctx, url)
	return cold, warm, err
}

func measure(ctx context.Context, url string) (sample, error) {
	var s sample
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return s, err
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`performance.getEntriesByName("attestd:list-rendered").length > 0`,
		chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		return s, fmt.Errorf("the list did not render: %w", err)
	}
	var err error
	if s.rendered, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`performance.getEntriesByName("attestd:list-rendered")[0].startTime`)); err != nil {
		return s, err
	}
	// Everything up to the rendered list (later polls excluded).
	if s.bytes, err = chromedp.Run(ctx, chromedp.Evaluate[float64](`(() => { const end = performance.getEntriesByName("attestd:list-rendered")[0].startTime;
	  return performance.getEntriesByType("navigation").concat(performance.getEntriesByType("resource")).filter((e) => e.startTime <= end).reduce((s, e) => s + e.transferSize, 0); })()`)); err != nil {
		return s, err
	}
	s.requests, err = chromedp.Run(ctx, chromedp.Evaluate[int](`(() => { const end = performance.getEntriesByName("attestd:list-rendered")[0].startTime;
	  return 1 + performance.getEntriesByType("resource").filter((e) => e.startTime <= end).length; })()`))
	return s, err
}
