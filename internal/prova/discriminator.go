package prova

// Discriminator is the 8-byte Anchor prefix of instruction data, event data
// and account data.
type Discriminator [8]byte

// Discriminators, as listed in the program's IDL.
var (
	DiscRegisterAgent      = Discriminator{135, 157, 66, 195, 2, 113, 175, 30}
	DiscRecordAttestations = Discriminator{228, 78, 80, 123, 83, 203, 69, 235}
	DiscRevokeAgent        = Discriminator{227, 60, 209, 125, 240, 117, 163, 73}
	DiscUpdatePolicyRoot   = Discriminator{204, 72, 225, 189, 180, 164, 143, 74}

	DiscAgentAccount = Discriminator{241, 119, 69, 140, 233, 9, 112, 50}

	DiscAgentRegistered   = Discriminator{191, 78, 217, 54, 232, 100, 189, 85}
	DiscAttestationIssued = Discriminator{173, 237, 90, 123, 155, 224, 231, 242}
	DiscAgentRevoked      = Discriminator{218, 156, 242, 182, 58, 95, 202, 161}
	DiscPolicyRootUpdated = Discriminator{194, 120, 18, 146, 205, 54, 53, 217}
)

// Program error codes (Anchor custom errors), as listed in the IDL.
const (
	ErrCodeAgentRevoked         = 6000
	ErrCodeUnauthorizedOperator = 6001
	ErrCodeInvalidSignature     = 6002
	ErrCodeEmptyBatch           = 6003
	ErrCodeBatchLimitExceeded   = 6004
	ErrCodeInvalidPolicyRoot    = 6005
)

// ProgramError is one of the program's custom errors.
type ProgramError struct {
	Code int
	Name string
	Msg  string
}

// ProgramErrors lists the IDL's errors by code.
var ProgramErrors = map[int]ProgramError{
	ErrCodeAgentRevoked:         {ErrCodeAgentRevoked, "AgentRevoked", "Agent has been revoked and cannot issue attestations"},
	ErrCodeUnauthorizedOperator: {ErrCodeUnauthorizedOperator, "UnauthorizedOperator", "Caller is not the operator of this agent"},
	ErrCodeInvalidSignature:     {ErrCodeInvalidSignature, "InvalidSignature", "Invalid Ed25519 signature or instruction missing"},
	ErrCodeEmptyBatch:           {ErrCodeEmptyBatch, "EmptyBatch", "Batch must contain at least one attestation"},
	ErrCodeBatchLimitExceeded:   {ErrCodeBatchLimitExceeded, "BatchLimitExceeded", "Batch limit exceeded (max 100)"},
	ErrCodeInvalidPolicyRoot:    {ErrCodeInvalidPolicyRoot, "InvalidPolicyRoot", "Invalid Policy Root"},
}

// MaxAttestationsPerTx is the program's batch limit.
const MaxAttestationsPerTx = 100
