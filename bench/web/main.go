// Command web-bench measures a page load of the web application in
// headless Chromium against a running node (make run): the requests the
// browser sends over the network and the bytes it transfers (document,
// assets and API answers, as Resource Timing counts them; an answer from
// the browser's cache transfers nothing and is not a request), and the
// time from navigation start to the first data on screen (the home page's
// "attestd:home-figures" mark) and to the newest attestations
// ("attestd:list-rendered"). Each first load uses a fresh browser profile
// (empty cache); the repeat load opens the page again in the last profile,
// as a returning visitor does.
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
	Requests, Assets, API, Document int     // over the network
	Bytes                           float64 // transferred
	Figures, List                   float64 // ms after navigation start
}

func main() {
	url := flag.String("url", "http://127.0.0.1:8080/", "the home page's address (a running node)")
	runs := flag.Int("runs", 7, "first loads (a fresh profile each)")
	flag.Parse()
	path, err := exec.LookPath("chromium")
	if err != nil {
		fmt.Fprintln(os.Stderr, "web-bench needs Chromium: apt-get install -y chromium")
		os.Exit(2)
	}
	var first []sample
	var repeat sample
	for i := 0; i < *runs; i++ {
		s, r, err := run(path, *url, i == *runs-1)
		if err != nil {
			fmt.Fprintln(os.Stderr, "web-bench:", err)
			os.Exit(1)
		}
		first = append(first, s)
		if i == *runs-1 {
			repeat = r
		}
	}
	slices.SortFunc(first, func(a, b sample) int { return int(a.Figures - b.Figures) })
	med := first[len(first)/2]
	fmt.Printf("home page at %s, headless Chromium, %d first loads\n", *url, *runs)
	fmt.Printf("| load | requests (document, assets, API) | bytes transferred | first data (figures) | newest attestations |\n|---|---|---|---|---|\n")
	fmt.Printf("| first (median) | %d (%d, %d, %d) | %.0f | %.0f ms (min %.0f, max %.0f) | %.0f ms |\n", med.Requests, med.Document, med.Assets, med.API,
		med.Bytes, med.Figures, first[0].Figures, first[len(first)-1].Figures, med.List)
	fmt.Printf("| repeat (same profile) | %d (%d, %d, %d) | %.0f | %.0f ms | %.0f ms |\n", repeat.Requests, repeat.Document, repeat.Assets, repeat.API,
		repeat.Bytes, repeat.Figures, repeat.List)
}

// run loads the page in a fresh profile, and again when repeatToo.
func run(path, url string, repeatToo bool) (first, repeat sample, err error) {
	dir, err := os.MkdirTemp("", "web-bench-")
	if err != nil {
		return first, repeat, err
	}
	defer os.RemoveAll(dir)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.WindowSize(1440, 900), chromedp.UserDataDir(dir))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, time.Minute)
	defer cancelT()
	if first, err = measure(ctx, url); err != nil || !repeatToo {
		return first, repeat, err
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		return first, repeat, err
	}
	repeat, err = measure(ctx, url)
	return first, repeat, err
}

// measureJS counts what went over the network up to the later of the two
// marks (the live stream opened after them is left out).
const measureJS = `(() => {
  const mark = (n) => { const e = performance.getEntriesByName(n); return e.length ? e[0].startTime : -1; };
  const figures = mark("attestd:home-figures"), list = mark("attestd:list-rendered"), end = Math.max(figures, list);
  const nav = performance.getEntriesByType("navigation")[0];
  const res = performance.getEntriesByType("resource").filter((e) => e.startTime <= end);
  const net = res.filter((e) => e.transferSize > 0);
  return {Requests: net.length + (nav.transferSize > 0 ? 1 : 0), Document: nav.transferSize > 0 ? 1 : 0,
    Assets: net.filter((e) => new URL(e.name).pathname.startsWith("/assets/")).length,
    API: net.filter((e) => new URL(e.name).pathname.startsWith("/api/")).length,
    Bytes: nav.transferSize + res.reduce((s, e) => s + e.transferSize, 0), Figures: figures, List: list};
})()`

func measure(ctx context.Context, url string) (sample, error) {
	var s sample
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		return s, err
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`performance.getEntriesByName("attestd:home-figures").length > 0 && performance.getEntriesByName("attestd:list-rendered").length > 0`,
		chromedp.WithPollingInterval(5*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		return s, fmt.Errorf("the home page did not render its data: %w", err)
	}
	return chromedp.Run(ctx, chromedp.Evaluate[sample](measureJS))
}
