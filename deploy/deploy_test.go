package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/pmlin/pmlin/cli"
	"github.com/pmlin/pmlin/lockmwcas"
	"github.com/pmlin/pmlin/mwcas"
	"github.com/pmlin/pmlin/target"
)

// docs decodes every YAML document of a manifest.
func docs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, d)
	}
}

// at walks a decoded document by keys and list indexes.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("no %q in %v", k, v)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("no item %d in %v", k, v)
			}
			v = l[k]
		}
	}
	return v
}

// TestFuzzJob checks the Indexed Job: its shape (N the same in three
// places, the volume it writes to), then its command line: run by sh with
// a stand-in pmlin, as pod 3 would run it, it must ask for shard 3/N, write
// the summary to the volume, and its arguments must be accepted by pmlin's
// own command line (run briefly, with --runs added).
func TestFuzzJob(t *testing.T) {
	ds := docs(t, "kubernetes/fuzz-job.yaml")
	if len(ds) != 2 || ds[0]["kind"] != "PersistentVolumeClaim" || ds[1]["kind"] != "Job" {
		t.Fatalf("expected a PersistentVolumeClaim and a Job, got %d documents", len(ds))
	}
	pvc, job := ds[0], ds[1]
	spec := at(t, job, "spec").(map[string]any)
	if spec["completionMode"] != "Indexed" || spec["completions"] != spec["parallelism"] {
		t.Fatalf("job spec %v", spec)
	}
	pod := at(t, spec, "template", "spec")
	if at(t, pod, "restartPolicy") != "Never" {
		t.Fatal("podFailurePolicy needs restartPolicy Never")
	}
	c := at(t, pod, "containers", 0)
	if at(t, spec, "podFailurePolicy", "rules", 0, "onExitCodes", "containerName") != at(t, c, "name") {
		t.Fatal("the failure policy names another container")
	}
	env := map[string]string{}
	for _, e := range at(t, c, "env").([]any) {
		env[at(t, e, "name").(string)] = at(t, e, "value").(string)
	}
	if env["SHARDS"] == "" || env["SHARDS"] != strings.TrimSpace(yamlString(spec["completions"])) {
		t.Fatalf("SHARDS %q, completions %v", env["SHARDS"], spec["completions"])
	}
	if at(t, pod, "volumes", 0, "persistentVolumeClaim", "claimName") != at(t, pvc, "metadata", "name") ||
		at(t, c, "volumeMounts", 0, "name") != at(t, pod, "volumes", 0, "name") {
		t.Fatal("the job does not mount the claim")
	}
	n, err := strconv.Atoi(env["SHARDS"])
	if err != nil || n < 4 {
		t.Fatalf("SHARDS %q: at least 4 for this test", env["SHARDS"])
	}
	mount := at(t, c, "volumeMounts", 0, "mountPath").(string)
	cmd := at(t, c, "command").([]any)
	script := at(t, c, "args", 0).(string)
	if len(cmd) != 2 || cmd[0] != "/bin/sh" || cmd[1] != "-c" || !strings.Contains(script, "$JOB_COMPLETION_INDEX") {
		t.Fatalf("command %v %q", cmd, script)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}

	// Pod 3, with a stand-in pmlin that records its arguments.
	dir := t.TempDir()
	bin, vol := filepath.Join(dir, "bin"), filepath.Join(dir, "volume")
	os.MkdirAll(bin, 0o755)
	os.MkdirAll(vol, 0o755)
	argsFile := filepath.Join(dir, "args")
	fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_OUT\"\necho '{\"runs\":0}'\n"
	if err := os.WriteFile(filepath.Join(bin, "pmlin"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", strings.ReplaceAll(script, mount, vol))
	sh.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "JOB_COMPLETION_INDEX=3",
		"SHARDS="+env["SHARDS"], "PMLIN_ARGS="+env["PMLIN_ARGS"], "ARGS_OUT="+argsFile)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the job's command: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "summaries", "shard-3.json")); err != nil || string(b) != "{\"runs\":0}\n" {
		t.Fatalf("summary: %q %v", b, err)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	joined := strings.Join(args, " ")
	for _, want := range []string{"fuzz ", "--shard 3/" + env["SHARDS"], "--json", "--out " + filepath.Join(vol, "shard-3"), env["PMLIN_ARGS"]} {
		if !strings.Contains(joined, want) {
			t.Fatalf("pmlin %s: no %q", joined, want)
		}
	}

	// The same arguments, run by pmlin for two runs: those of indexes 3 and
	// 3+N of a campaign of 2N runs.
	var stdout, stderr bytes.Buffer
	pm := cli.Command{Targets: []*target.Target{mwcas.Target(), lockmwcas.Target()}, Stdout: &stdout, Stderr: &stderr}
	code := pm.Run(context.Background(), append(args, "--runs", fmt.Sprint(2*n), "--seconds", "0", "--ops", "50"))
	var sum struct {
		Runs  int64
		Shard string
	}
	if code != 0 || json.Unmarshal(stdout.Bytes(), &sum) != nil || sum.Runs != 2 || sum.Shard != "3/"+env["SHARDS"] {
		t.Fatalf("pmlin %s: exit %d, %+v\n%s\n%s", joined, code, sum, stdout.String(), stderr.String())
	}
}

// TestCollectPod: the collecting pod mounts the job's volume.
func TestCollectPod(t *testing.T) {
	pvc := docs(t, "kubernetes/fuzz-job.yaml")[0]
	pod := docs(t, "kubernetes/collect-pod.yaml")
	if len(pod) != 1 || pod[0]["kind"] != "Pod" ||
		at(t, pod[0], "spec", "volumes", 0, "persistentVolumeClaim", "claimName") != at(t, pvc, "metadata", "name") {
		t.Fatalf("%v", pod)
	}
}

func yamlString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
