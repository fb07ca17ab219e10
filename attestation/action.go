package attestation

import "fmt"

// ActionType is the kind of action an attestation is a receipt for. Its
// numeric value is the borsh enum index of the on-chain ActionType.
type ActionType uint8

// The seven action types, in the on-chain order (the order is the wire value).
const (
	Transaction ActionType = iota
	Decision
	ModelInvocation
	ToolCall
	ResourceAccess
	PolicyCheck
	Custom
)

// NumActionTypes is how many action types the program defines.
const NumActionTypes = 7

var actionNames = [NumActionTypes]string{
	"Transaction", "Decision", "ModelInvocation", "ToolCall",
	"ResourceAccess", "PolicyCheck", "Custom",
}

// ActionTypes lists every action type in wire order.
func ActionTypes() []ActionType {
	out := make([]ActionType, NumActionTypes)
	for i := range out {
		out[i] = ActionType(i)
	}
	return out
}

// ActionTypeNames lists the names of every action type in wire order.
func ActionTypeNames() []string { return append([]string(nil), actionNames[:]...) }

// Valid reports whether t is one of the seven defined action types.
func (t ActionType) Valid() bool { return t < NumActionTypes }

// String returns the action type's name, as used in the API.
func (t ActionType) String() string {
	if !t.Valid() {
		return fmt.Sprintf("ActionType(%d)", uint8(t))
	}
	return actionNames[t]
}

// ParseActionType maps an API name (exact, case-sensitive) to its action type.
func ParseActionType(s string) (ActionType, error) {
	for i, n := range actionNames {
		if n == s {
			return ActionType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown action type %q", s)
}

// MarshalText encodes the action type by name.
func (t ActionType) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("invalid action type %d", uint8(t))
	}
	return []byte(actionNames[t]), nil
}

// UnmarshalText decodes an action type from its name.
func (t *ActionType) UnmarshalText(b []byte) error {
	v, err := ParseActionType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}
