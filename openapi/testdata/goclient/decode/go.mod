// The module openapi/clients_test.go generates the oapi-codegen client into (a temporary copy).
module example.invalid/decode

go 1.26.8

require github.com/oapi-codegen/runtime v1.8.0

require (
	github.com/apapsch/go-jsonmerge/v2 v2.0.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
)
