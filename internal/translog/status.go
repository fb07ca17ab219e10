package translog

import (
	"context"

	"github.com/attestd/attestd/attestation"
	"github.com/attestd/attestd/internal/translog/logreport"
)

// Status is the log's newest checkpoint as the API's overview reports it
// (app.LogStatusFunc): its origin, size and signing time; false while the
// log is off or no checkpoint is signed yet.
func (s *Server) Status(ctx context.Context) (logreport.Status, bool) {
	if !s.opt.Config.Enabled() {
		return logreport.Status{}, false
	}
	cp, _ := s.checkpoint(ctx)
	if cp == nil {
		return logreport.Status{}, false
	}
	return logreport.Status{Origin: cp.Origin, Size: cp.Size, CheckpointAt: attestation.At(cp.SignedAt)}, true
}
