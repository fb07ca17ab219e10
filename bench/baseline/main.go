// Command baseline is the benchmark's yardstick: a bare Fiber handler that
// answers a small JSON object with Fiber's default settings, on the same
// machine as attestd, so request rates can be reported as a ratio of it.
// (With attestd's server settings instead, timeouts and buffer sizes, it
// answered as many requests/s within the run-to-run noise.)
package main

import (
	"flag"
	"log"

	"github.com/gofiber/fiber/v2"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:18082", "listen address (loopback)")
	flag.Parse()
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	body := map[string]any{"status": "ok", "version": "baseline", "n": 42}
	app.Get("/json", func(c *fiber.Ctx) error { return c.JSON(body) })
	log.Fatal(app.Listen(*addr))
}
