package devnet

import (
	"io"
	"net/http"
	"strings"
	"time"
)

func httpPost(url, body string) (string, error) {
	cl := &http.Client{Timeout: 10 * time.Second}
	resp, err := cl.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
