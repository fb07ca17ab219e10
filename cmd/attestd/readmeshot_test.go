package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/attestd/attestd/internal/web"
)

// ScreenshotKey is the PNG text chunk's keyword that names the version of
// the look a screenshot shows (web.ScreenshotVersion).
const ScreenshotKey = "attestd-look"

// readmeShot stamps a PNG with the home page's look version, in a tEXt
// chunk right after the header chunk.
func readmeShot(png []byte) ([]byte, error) {
	v, err := web.ScreenshotVersion()
	if err != nil {
		return nil, err
	}
	const sig = "\x89PNG\r\n\x1a\n"
	if len(png) < 33 || string(png[:8]) != sig || string(png[12:16]) != "IHDR" {
		return nil, errors.New("not a PNG")
	}
	end := 8 + 12 + int(binary.BigEndian.Uint32(png[8:12])) // signature, then IHDR
	data := append([]byte(ScreenshotKey+"\x00"), v...)
	var chunk bytes.Buffer
	_ = binary.Write(&chunk, binary.BigEndian, uint32(len(data)))
	chunk.WriteString("tEXt")
	chunk.Write(data)
	_ = binary.Write(&chunk, binary.BigEndian, crc32.ChecksumIEEE(append([]byte("tEXt"), data...)))
	out := append(append(append([]byte{}, png[:end]...), chunk.Bytes()...), png[end:]...)
	return out, nil
}
