package openapi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

//go:embed openapi.yaml
var yamlDoc []byte

var (
	once    sync.Once
	doc     *openapi3.T
	jsonDoc []byte
	loadErr error
)

func load() {
	doc, loadErr = openapi3.NewLoader().LoadFromData(yamlDoc)
	if loadErr != nil {
		loadErr = fmt.Errorf("parse openapi.yaml: %w", loadErr)
		return
	}
	jsonDoc, loadErr = json.Marshal(doc)
	if loadErr != nil {
		loadErr = fmt.Errorf("encode openapi document: %w", loadErr)
	}
}

// JSON returns the document as JSON.
func JSON() ([]byte, error) {
	once.Do(load)
	return jsonDoc, loadErr
}

// Document returns the parsed document (shared; do not modify).
func Document() (*openapi3.T, error) {
	once.Do(load)
	return doc, loadErr
}
