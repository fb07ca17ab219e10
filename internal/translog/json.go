package translog

import (
	"encoding/json"
	"fmt"
)

func jsonOf(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode answer: %w", err)
	}
	return append(b, '\n'), nil // as every JSON answer (httpapi.Marshal)
}
