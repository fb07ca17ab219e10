package openapi

import (
	"context"
	"testing"
)

func TestDocumentValidates(t *testing.T) {
	doc, err := Document()
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatal(err)
	}
}
