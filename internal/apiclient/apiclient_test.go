package apiclient_test

import (
	"bytes"
	"os"
	"os/exec"
	"testing"
)

// apiclient.gen.go is what oapi-codegen, at the version oapigen/go.mod
// pins (a module of its own, so the generator's dependencies stay out of
// seckill's go.mod), writes from httpapi/openapi.json with
// oapi-codegen.yaml: a change of the document without `make docs` fails
// here. httpapi's TestDocsGeneratedClient runs a sale through the client.
func TestDocsGeneratedClientIsCurrent(t *testing.T) {
	cmd := exec.Command("go", "-C", "oapigen", "tool", "oapi-codegen", "-config", "../oapi-codegen.yaml", "../../../httpapi/openapi.json")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("oapi-codegen: %v\n%s", err, stderr.String())
	}
	if os.Getenv("SECKILL_UPDATE_DOCS") != "" {
		if err := os.WriteFile("apiclient.gen.go", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile("apiclient.gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("internal/apiclient/apiclient.gen.go is not what oapi-codegen makes of httpapi/openapi.json now: run make docs and commit it")
	}
}
