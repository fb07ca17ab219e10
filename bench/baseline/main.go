// Command baseline is the benchmark's yardstick: a bare Fiber handler that
// answers a small JSON object, on the same machine and Fiber settings as
// attestd, so request rates can be reported as a ratio of it.
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
