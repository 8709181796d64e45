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
	"regexp"
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
// a stand-in pmlin, as pod 3 would run it with the CPU limit the Downward
// API gives, it must ask for shard 3/N with --jobs the CPU limit, write the
// summary to the volume and print it last, exit with pmlin's status (what
// the podFailurePolicy reads), and its arguments must be accepted by
// pmlin's own command line (run briefly, with --runs added).
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
	env := envOf(t, c)
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
	// The CPU limit, as the Downward API gives it to the container.
	cpuVar, cpus := cpuLimitVar(t, c)
	mount := at(t, c, "volumeMounts", 0, "mountPath").(string)
	cmd := at(t, c, "command").([]any)
	script := at(t, c, "args", 0).(string)
	if len(cmd) != 2 || cmd[0] != "/bin/sh" || cmd[1] != "-c" || !strings.Contains(script, "$JOB_COMPLETION_INDEX") {
		t.Fatalf("command %v %q", cmd, script)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}

	// Pod 3, with a stand-in pmlin that records its arguments, prints a
	// summary and exits with $FAKE_EXIT.
	var args []string
	for _, exit := range []int{0, 1, 2} {
		dir := t.TempDir()
		bin, vol := filepath.Join(dir, "bin"), filepath.Join(dir, "volume")
		os.MkdirAll(bin, 0o755)
		os.MkdirAll(vol, 0o755)
		argsFile := filepath.Join(dir, "args")
		fake := "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$ARGS_OUT\"\necho 'text on stderr' >&2\necho '{\"runs\":0}'\nexit $FAKE_EXIT\n"
		if err := os.WriteFile(filepath.Join(bin, "pmlin"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
		sh := exec.Command("sh", "-c", strings.ReplaceAll(script, mount, vol))
		sh.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "JOB_COMPLETION_INDEX=3",
			"SHARDS="+env["SHARDS"], "PMLIN_ARGS="+env["PMLIN_ARGS"], cpuVar+"="+strconv.Itoa(cpus),
			"ARGS_OUT="+argsFile, "FAKE_EXIT="+strconv.Itoa(exit))
		var stdout, stderr bytes.Buffer
		sh.Stdout, sh.Stderr = &stdout, &stderr
		err := sh.Run()
		if code := sh.ProcessState.ExitCode(); code != exit {
			t.Fatalf("the job's command exits %d when pmlin exits %d (%v)\n%s", code, exit, err, stderr.String())
		}
		if b, err := os.ReadFile(filepath.Join(vol, "summaries", "shard-3.json")); err != nil || string(b) != "{\"runs\":0}\n" {
			t.Fatalf("summary: %q %v", b, err)
		}
		if stdout.String() != "{\"runs\":0}\n" {
			t.Fatalf("the pod's standard output is %q, not the summary", stdout.String())
		}
		b, err := os.ReadFile(argsFile)
		if err != nil {
			t.Fatal(err)
		}
		args = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		joined := strings.Join(args, " ")
		for _, want := range []string{"fuzz ", "--shard 3/" + env["SHARDS"], "--jobs " + strconv.Itoa(cpus), "--json", "--out " + filepath.Join(vol, "shard-3"), env["PMLIN_ARGS"]} {
			if !strings.Contains(joined, want) {
				t.Fatalf("pmlin %s: no %q", joined, want)
			}
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
		t.Fatalf("pmlin %s: exit %d, %+v\n%s\n%s", strings.Join(args, " "), code, sum, stdout.String(), stderr.String())
	}
}

// envOf is a container's environment of plain values.
func envOf(t *testing.T, c any) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range at(t, c, "env").([]any) {
		if v, ok := e.(map[string]any)["value"].(string); ok {
			env[at(t, e, "name").(string)] = v
		}
	}
	return env
}

// cpuLimitVar is the variable of container c that the Downward API sets
// to its CPU limit in whole CPUs, and that value: Kubernetes rounds
// limits.cpu up to a multiple of the divisor (1). The limit must be set,
// and equal to the request (the pod gets the CPUs --jobs counts on).
func cpuLimitVar(t *testing.T, c any) (string, int) {
	t.Helper()
	limit, _ := at(t, c, "resources", "limits").(map[string]any)["cpu"].(string)
	request, _ := at(t, c, "resources", "requests").(map[string]any)["cpu"].(string)
	if limit == "" || limit != request {
		t.Fatalf("limits.cpu %q, requests.cpu %q: set both, equal", limit, request)
	}
	milli, err := strconv.Atoi(strings.TrimSuffix(limit, "m"))
	if !strings.HasSuffix(limit, "m") {
		milli *= 1000
	}
	if err != nil || milli <= 0 {
		t.Fatalf("limits.cpu %q", limit)
	}
	for _, e := range at(t, c, "env").([]any) {
		from, _ := e.(map[string]any)["valueFrom"].(map[string]any)
		ref, _ := from["resourceFieldRef"].(map[string]any)
		if ref["resource"] != "limits.cpu" {
			continue
		}
		if ref["containerName"] != at(t, c, "name") || (ref["divisor"] != nil && ref["divisor"] != "1") {
			t.Fatalf("resourceFieldRef %v: this container's limits.cpu in whole CPUs", ref)
		}
		name := at(t, e, "name").(string)
		if !strings.Contains(at(t, c, "args", 0).(string), `--jobs "$`+name+`"`) {
			t.Fatalf("the job's command does not pass $%s as --jobs", name)
		}
		return name, (milli + 999) / 1000
	}
	t.Fatal("no variable holds the CPU limit (resourceFieldRef limits.cpu) for --jobs")
	return "", 0
}

// containers are every container of the manifests, with their pod spec.
func containers(t *testing.T) (out []struct{ pod, c map[string]any }) {
	t.Helper()
	for _, f := range []string{"kubernetes/fuzz-job.yaml", "kubernetes/collect-pod.yaml"} {
		for _, d := range docs(t, f) {
			var pod any
			switch d["kind"] {
			case "Job":
				pod = at(t, d, "spec", "template", "spec")
			case "Pod":
				pod = at(t, d, "spec")
			default:
				continue
			}
			for _, c := range at(t, pod, "containers").([]any) {
				out = append(out, struct{ pod, c map[string]any }{pod.(map[string]any), c.(map[string]any)})
			}
		}
	}
	if len(out) < 2 {
		t.Fatalf("%d containers", len(out))
	}
	return out
}

// TestImagePull: no node runs a stale image. Every container names the
// same image (the Job's and the collecting pod's: one name to edit), by
// digest, or by a tag that is not "latest" and pulled at every start
// (imagePullPolicy Always).
func TestImagePull(t *testing.T) {
	first := ""
	for _, x := range containers(t) {
		img, _ := x.c["image"].(string)
		policy := x.c["imagePullPolicy"]
		tag := ""
		if i := strings.LastIndex(img, ":"); i > strings.LastIndex(img, "/") {
			tag = img[i+1:]
		}
		switch {
		case strings.Contains(img, "@sha256:"):
		case tag == "" || tag == "latest":
			t.Errorf("container %v: image %q has no version (a mutable tag)", x.c["name"], img)
		case policy != "Always":
			t.Errorf("container %v: image %q by tag with imagePullPolicy %v: a node may keep an older image of that tag (Always, or a digest)", x.c["name"], img, policy)
		}
		if first == "" {
			first = img
		} else if img != first {
			t.Errorf("container %v: image %q, not %q", x.c["name"], img, first)
		}
	}
}

// TestNotRoot: every pod runs as a user that is not root, the image's
// (a numeric USER in the Dockerfile, so that the kubelet can check
// runAsNonRoot), without privilege escalation or capabilities, on a
// read-only root file system with a writable /tmp where pmlin writes.
func TestNotRoot(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	user := ""
	for _, l := range strings.Split(string(b), "\n") {
		if u, ok := strings.CutPrefix(strings.TrimSpace(l), "USER "); ok {
			user = strings.TrimSpace(u) // the last stage's last USER
		}
	}
	uid, _, _ := strings.Cut(user, ":")
	n, err := strconv.Atoi(uid)
	if err != nil || n == 0 {
		t.Fatalf("the Dockerfile's USER %q: a numeric user that is not root", user)
	}
	for _, x := range containers(t) {
		sc, _ := x.pod["securityContext"].(map[string]any)
		if sc["runAsNonRoot"] != true || sc["runAsUser"] != n {
			t.Errorf("pod of %v: securityContext %v: runAsNonRoot and runAsUser %d", x.c["name"], sc, n)
		}
		if at(t, sc, "seccompProfile", "type") != "RuntimeDefault" {
			t.Errorf("pod of %v: no RuntimeDefault seccomp profile", x.c["name"])
		}
		csc, _ := x.c["securityContext"].(map[string]any)
		if csc["allowPrivilegeEscalation"] != false || csc["readOnlyRootFilesystem"] != true ||
			fmt.Sprint(at(t, csc, "capabilities", "drop")) != "[ALL]" {
			t.Errorf("container %v: securityContext %v", x.c["name"], csc)
		}
	}
	job := docs(t, "kubernetes/fuzz-job.yaml")[1]
	pod := at(t, job, "spec", "template", "spec")
	if at(t, pod, "securityContext", "fsGroup") != n {
		t.Error("the Job's volume is not made writable for the image's group (fsGroup)")
	}
	tmp := false
	for _, m := range at(t, pod, "containers", 0, "volumeMounts").([]any) {
		if at(t, m, "mountPath") == "/tmp" {
			for _, v := range at(t, pod, "volumes").([]any) {
				if at(t, v, "name") == at(t, m, "name") && v.(map[string]any)["emptyDir"] != nil {
					tmp = true
				}
			}
		}
	}
	if !tmp {
		t.Error("no emptyDir at /tmp: the process-kill modes write their region files there")
	}
}

// TestDeadlines: the Job ends, and is cleaned up: activeDeadlineSeconds
// leaves room for each shard to run its --seconds as many times as it may
// be run (1 + backoffLimitPerIndex), and ttlSecondsAfterFinished deletes
// the finished Job.
func TestDeadlines(t *testing.T) {
	job := docs(t, "kubernetes/fuzz-job.yaml")[1]
	spec := at(t, job, "spec").(map[string]any)
	deadline, _ := spec["activeDeadlineSeconds"].(int)
	ttl, _ := spec["ttlSecondsAfterFinished"].(int)
	tries := 1 + spec["backoffLimitPerIndex"].(int)
	fields := strings.Fields(envOf(t, at(t, spec, "template", "spec", "containers", 0))["PMLIN_ARGS"])
	seconds := 30.0 // pmlin fuzz's default
	for i, f := range fields {
		if f == "--seconds" && i+1 < len(fields) {
			seconds, _ = strconv.ParseFloat(fields[i+1], 64)
		}
	}
	if float64(deadline) <= float64(tries)*seconds {
		t.Errorf("activeDeadlineSeconds %d: not above %d tries of --seconds %g", deadline, tries, seconds)
	}
	if ttl <= 0 {
		t.Errorf("ttlSecondsAfterFinished %d", ttl)
	}
}

// TestKubernetesVersion: backoffLimitPerIndex (and the FailIndex action)
// run by default from Kubernetes 1.29 (beta; alpha in 1.28 behind the
// JobBackoffLimitPerIndex gate, GA in 1.33): the README and the manifest
// say so.
func TestKubernetesVersion(t *testing.T) {
	job := docs(t, "kubernetes/fuzz-job.yaml")[1]
	if at(t, job, "spec", "backoffLimitPerIndex") == nil {
		t.Skip("no backoffLimitPerIndex")
	}
	for _, f := range []string{"README.md", "kubernetes/fuzz-job.yaml"} {
		b, _ := os.ReadFile(f)
		if !strings.Contains(strings.Join(strings.Fields(string(b)), " "), "Kubernetes 1.29 or later") {
			t.Errorf("%s does not say that the Job needs Kubernetes 1.29 or later", f)
		}
	}
}

// TestDockerignore: the build context leaves out .git (and the like), and
// nothing the build of cmd/pmlin needs: the module's files, the Go
// sources of every package outside testdata, the PGO profile. The patterns
// are checked with Docker's rules as far as they are used here (a
// pattern matches a path or one of its parent directories, with
// filepath.Match; a leading **/ matches at any depth); other syntax is
// refused, so that the check stays faithful.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") || strings.Contains(strings.TrimPrefix(l, "**/"), "**") {
			t.Fatalf(".dockerignore: %q: syntax this test does not check", l)
		}
		pats = append(pats, strings.TrimPrefix(l, "/"))
	}
	ignored := func(p string) bool {
		parts := strings.Split(p, "/")
		for i := 1; i <= len(parts); i++ {
			prefix := strings.Join(parts[:i], "/")
			for _, pat := range pats {
				if sub, ok := strings.CutPrefix(pat, "**/"); ok {
					if m, _ := filepath.Match(sub, parts[i-1]); m {
						return true
					}
				} else if m, _ := filepath.Match(pat, prefix); m {
					return true
				}
			}
		}
		return false
	}
	if !ignored(".git") || !ignored(".git/config") {
		t.Error(".dockerignore does not leave out .git")
	}
	needed := []string{"go.mod", "go.sum", "cmd/pmlin/default.pgo"}
	filepath.WalkDir("..", func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel("..", p)
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || d.Name() == ".git"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go"):
			needed = append(needed, filepath.ToSlash(rel))
		}
		return nil
	})
	if len(needed) < 50 {
		t.Fatalf("found %d files the build needs: walked the wrong tree?", len(needed))
	}
	for _, p := range needed {
		if ignored(p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
}

// TestWithoutReadWriteMany runs the README's edit for a cluster without
// ReadWriteMany storage: the claim is gone, the Job is unchanged but its
// findings volume, an emptyDir.
func TestWithoutReadWriteMany(t *testing.T) {
	if _, err := exec.LookPath("sed"); err != nil {
		t.Skip("no sed")
	}
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.ReplaceAll(string(b), "\\\n", "")
	m := regexp.MustCompile(`(?m)^\s*(sed -e .*?)\s+deploy/kubernetes/fuzz-job.yaml \| kubectl apply -f -$`).FindStringSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no sed command for a cluster without ReadWriteMany storage")
	}
	out, err := exec.Command("sh", "-c", m[1]+" kubernetes/fuzz-job.yaml").Output()
	if err != nil {
		t.Fatalf("%s: %v", m[1], err)
	}
	var got []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(out))
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("the edited manifest: %v\n%s", err, out)
		}
		got = append(got, d)
	}
	want := docs(t, "kubernetes/fuzz-job.yaml")[1]
	vols := at(t, want, "spec", "template", "spec", "volumes").([]any)
	vols[0] = map[string]any{"name": at(t, vols[0], "name"), "emptyDir": map[string]any{}}
	if len(got) != 1 || yamlString(got[0]) != yamlString(want) {
		t.Fatalf("the edited manifest is not the Job with an emptyDir for its findings:\n%s", out)
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
