package test

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"go.yaml.in/yaml/v3"

	"github.com/healthroute/healthroute/internal/coretest"
)

// kubePlugins are the plugins a Kubernetes cluster's Corefile and its operators
// use; the bundled binary must list each.
var kubePlugins = []string{"kubernetes", "loop", "forward", "cache", "reload", "health", "ready", "errors", "log", "hosts", "loadbalance", "prometheus", "healthroute"}

// pluginsListed returns the plugin names `coredns -plugins` prints for bin.
func pluginsListed(t *testing.T, bin string) map[string]bool {
	t.Helper()
	out, err := exec.Command(bin, "-plugins").CombinedOutput()
	if err != nil {
		t.Fatalf("%s -plugins: %v\n%s", bin, err, out)
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		listed[strings.TrimPrefix(strings.TrimSpace(sc.Text()), "dns.")] = true
	}
	return listed
}

// TestBundledBinaryListsStandardPlugins: cmd/coredns carries every plugin of the
// plugin.cfg of the CoreDNS release it builds on, and healthroute.
func TestBundledBinaryListsStandardPlugins(t *testing.T) {
	listed := pluginsListed(t, coretest.Binary(t))
	for _, p := range kubePlugins {
		if !listed[p] {
			t.Errorf("the bundled coredns does not list %s", p)
		}
	}
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coredns/coredns").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/coredns/coredns: %v", err)
	}
	cfg, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(dir)), "plugin.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(cfg), "\n") {
		name, _, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		n++
		if !listed[name] {
			t.Errorf("plugin.cfg's %s is not in the bundled coredns", name)
		}
	}
	if n < 50 {
		t.Errorf("CoreDNS's plugin.cfg has %d plugins, want its standard set (over 50)", n)
	}
}

// kubeManifests parses deploy/kubernetes/coredns.yaml into its documents by kind.
func kubeManifests(t *testing.T) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile("../deploy/kubernetes/coredns.yaml")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("deploy/kubernetes/coredns.yaml: %v", err)
		}
		kind, _ := d["kind"].(string)
		if kind == "" || d["apiVersion"] == nil {
			t.Fatalf("a document without kind or apiVersion: %v", d)
		}
		docs[kind] = d
	}
	return docs
}

// dig walks m along keys (map keys, or "0" for a list's first element).
func dig(m any, keys ...string) any {
	for _, k := range keys {
		switch v := m.(type) {
		case map[string]any:
			m = v[k]
		case []any:
			if len(v) == 0 {
				return nil
			}
			m = v[0]
		default:
			return nil
		}
	}
	return m
}

// TestKubernetesManifestsParse: the deployment example has what a cluster DNS needs
// and its parts agree: the Deployment runs the Dockerfile's image as a non-root user
// on the ConfigMap's Corefile, its probes ask the health and ready plugins that
// Corefile has, the Service selects its pods, the kubernetes plugin's account may
// list and watch; docs/kubernetes.md shows that same Corefile.
func TestKubernetesManifestsParse(t *testing.T) {
	docs := kubeManifests(t)
	for _, kind := range []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Deployment", "Service"} {
		if docs[kind] == nil {
			t.Fatalf("deploy/kubernetes/coredns.yaml has no %s", kind)
		}
	}
	corefile, _ := dig(docs["ConfigMap"], "data", "Corefile").(string)
	for _, d := range []string{"kubernetes cluster.local", "loop", "forward . /etc/resolv.conf", "cache 30", "health {", "ready", "prometheus :9153", "healthroute example.org {"} {
		if !strings.Contains(corefile, d) {
			t.Errorf("the ConfigMap's Corefile has no %q", d)
		}
	}
	pod := dig(docs["Deployment"], "spec", "template", "spec")
	c := dig(pod, "containers", "0")
	if img, _ := dig(c, "image").(string); !strings.HasPrefix(img, "healthroute/coredns:") {
		t.Errorf("image %q, want the one deploy/Dockerfile says to build (healthroute/coredns)", img)
	}
	if args := fmt.Sprint(dig(c, "args")); args != "[-conf /etc/coredns/Corefile]" {
		t.Errorf("args %s, want -conf /etc/coredns/Corefile", args)
	}
	if dig(c, "volumeMounts", "0", "mountPath") != "/etc/coredns" || dig(pod, "volumes", "0", "configMap", "name") != "coredns" || dig(pod, "volumes", "0", "configMap", "items", "0", "key") != "Corefile" {
		t.Errorf("the Corefile is not mounted from the ConfigMap at /etc/coredns: %v / %v", dig(c, "volumeMounts"), dig(pod, "volumes"))
	}
	if dig(c, "securityContext", "runAsNonRoot") != true || dig(c, "securityContext", "allowPrivilegeEscalation") != false {
		t.Errorf("container securityContext %v, want non-root without privilege escalation", dig(c, "securityContext"))
	}
	if dig(pod, "securityContext", "sysctls", "0", "name") != "net.ipv4.ip_unprivileged_port_start" {
		t.Errorf("pod securityContext %v: a non-root user needs net.ipv4.ip_unprivileged_port_start to bind 53", dig(pod, "securityContext"))
	}
	if dig(c, "livenessProbe", "httpGet", "path") != "/health" || dig(c, "livenessProbe", "httpGet", "port") != 8080 ||
		dig(c, "readinessProbe", "httpGet", "path") != "/ready" || dig(c, "readinessProbe", "httpGet", "port") != 8181 {
		t.Errorf("probes %v / %v, want /health on 8080 and /ready on 8181 (the plugins' defaults)", dig(c, "livenessProbe"), dig(c, "readinessProbe"))
	}
	if sa := dig(pod, "serviceAccountName"); sa != dig(docs["ServiceAccount"], "metadata", "name") || sa != dig(docs["ClusterRoleBinding"], "subjects", "0", "name") {
		t.Errorf("service account %v is not the bound one", sa)
	}
	labels := dig(docs["Deployment"], "spec", "template", "metadata", "labels").(map[string]any)
	for k, v := range dig(docs["Service"], "spec", "selector").(map[string]any) {
		if labels[k] != v {
			t.Errorf("the Service selects %s=%v, the pods are labelled %v", k, v, labels)
		}
	}
	if rules := fmt.Sprint(dig(docs["ClusterRole"], "rules")); !strings.Contains(rules, "endpointslices") || !strings.Contains(rules, "watch") {
		t.Errorf("ClusterRole rules %s: the kubernetes plugin lists and watches endpointslices", rules)
	}
	doc, err := os.ReadFile("../docs/kubernetes.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)~~~ corefile\n(.*?)~~~").FindSubmatch(doc)
	if m == nil || string(m[1]) != corefile {
		t.Errorf("docs/kubernetes.md's corefile block is not the ConfigMap's Corefile:\n%s\nwant:\n%s", m, corefile)
	}
}

// startUpstream serves DNS over UDP on a loopback port with handle until the test
// ends, and returns its address.
func startUpstream(t *testing.T, handle dns.HandlerFunc) string {
	t.Helper()
	upstream := &dns.Server{Addr: "127.0.0.1:0", Net: "udp", Handler: handle}
	started := make(chan struct{})
	upstream.NotifyStartedFunc = func() { close(started) }
	go upstream.ListenAndServe()
	<-started
	t.Cleanup(func() { upstream.Shutdown() })
	return upstream.PacketConn.LocalAddr().String()
}

// TestKubernetesCorefileServesHealthroute runs the deployment example's Corefile
// (the stock Kubernetes one with a healthroute block) with the bundled binary, on
// loopback: the kubernetes plugin pointed at a closed port (no API server), forward
// at a DNS server of the test's, the check at an HTTP server of the test's, ports
// moved off 53, 8080, 8181 and 9153. It starts, answers healthroute's zone,
// forwards other zones, and its health endpoint answers.
func TestKubernetesCorefileServesHealthroute(t *testing.T) {
	corefile, _ := dig(kubeManifests(t)["ConfigMap"], "data", "Corefile").(string)
	upstream := startUpstream(t, func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Qtype == dns.TypeA {
			m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 5}, A: []byte{192, 0, 2, 99}}}
		}
		w.WriteMsg(m)
	})
	web := newFlipServer(t, false)
	port, hport, rport, mport, closed := coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t), coretest.FreePort(t)
	for _, r := range [][2]string{
		{".:53 {\n", fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n", port)},
		{"health {", fmt.Sprintf("health 127.0.0.1:%d {", hport)},
		{"    ready\n", fmt.Sprintf("    ready 127.0.0.1:%d\n", rport)},
		{"prometheus :9153", fmt.Sprintf("prometheus 127.0.0.1:%d", mport)},
		{"ip6.arpa {\n", fmt.Sprintf("ip6.arpa {\n        endpoint http://127.0.0.1:%d\n", closed)},
		{"forward . /etc/resolv.conf", "forward . " + upstream},
		{"http://192.0.2.10:8080/healthz", web.URL + "/healthz"},
	} {
		if strings.Count(corefile, r[0]) != 1 {
			t.Fatalf("the ConfigMap's Corefile has %q %d times, want once:\n%s", r[0], strings.Count(corefile, r[0]), corefile)
		}
		corefile = strings.Replace(corefile, r[0], r[1], 1)
	}
	srv := coretest.Start(t, corefile, port, "www.example.org")
	srv.WaitFor(t, "www.example.org", dns.TypeA, 20*time.Second, "healthroute's primary for www.example.org", func(m *dns.Msg) bool {
		return len(m.Answer) == 1 && strings.HasSuffix(m.Answer[0].String(), "192.0.2.10")
	})
	if m := srv.Query(t, "other.test", dns.TypeA); len(m.Answer) != 1 || !strings.HasSuffix(m.Answer[0].String(), "192.0.2.99") {
		t.Errorf("other.test. A: %v, want the upstream's 192.0.2.99 through forward", m.Answer)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", hport))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health: %v %v", resp, err)
	}
	if resp != nil {
		resp.Body.Close()
	}
}

// TestDockerfileBuildsStaticBinary runs deploy/Dockerfile's build: docker build when
// a Docker daemon answers and holds both base images (a test machine reaches no
// image registry); otherwise the build stage's go
// build command, word for word but for its output path. The binary must be static
// (the distroless static image has no libc) and list the Kubernetes plugins and
// healthroute. The Dockerfile's stages must be a Go build on go.mod's Go version and
// a distroless static image running as nonroot.
func TestDockerfileBuildsStaticBinary(t *testing.T) {
	b, err := os.ReadFile("../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	froms := regexp.MustCompile(`(?m)^FROM (\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) != 2 || !strings.HasPrefix(froms[0][1], "golang:"+string(goVersion[1])) || !strings.HasPrefix(froms[1][1], "gcr.io/distroless/static") || !strings.HasSuffix(froms[1][1], ":nonroot") {
		t.Errorf("stages %v, want golang:%s then gcr.io/distroless/static...:nonroot", froms, goVersion[1])
	}
	if !regexp.MustCompile(`(?m)^USER nonroot`).MatchString(df) {
		t.Error("the image does not run as nonroot")
	}
	run := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .* -o /out/coredns \./cmd/coredns)$`).FindStringSubmatch(df)
	if run == nil {
		t.Fatal("deploy/Dockerfile has no RUN CGO_ENABLED=0 go build ... -o /out/coredns ./cmd/coredns")
	}
	bin := filepath.Join(t.TempDir(), "coredns")
	if dockerCanBuild(froms) {
		tag := fmt.Sprintf("healthroute-coredns-test:%d", os.Getpid())
		if out, err := exec.Command("docker", "build", "-q", "-f", "../deploy/Dockerfile", "-t", tag, "..").CombinedOutput(); err != nil {
			t.Fatalf("docker build: %v\n%s", err, out)
		}
		t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
		cid, err := exec.Command("docker", "create", tag).Output()
		if err != nil {
			t.Fatalf("docker create: %v", err)
		}
		id := strings.TrimSpace(string(cid))
		defer exec.Command("docker", "rm", id).Run()
		if out, err := exec.Command("docker", "cp", id+":/coredns", bin).CombinedOutput(); err != nil {
			t.Fatalf("docker cp: %v\n%s", err, out)
		}
	} else {
		t.Log("no Docker daemon: running the Dockerfile's go build command")
		cmd := exec.Command("sh", "-c", strings.Replace(run[1], "-o /out/coredns", "-o "+bin, 1))
		cmd.Dir = ".."
		started := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", run[1], err, out)
		}
		t.Logf("%s took %v", run[1], time.Since(started).Round(time.Second))
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a program interpreter: it is dynamically linked, the static image cannot run it")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) != 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	listed := pluginsListed(t, bin)
	for _, p := range kubePlugins {
		if !listed[p] {
			t.Errorf("the image's coredns does not list %s", p)
		}
	}
}

// dockerCanBuild reports whether a Docker daemon answers and already holds every
// image the Dockerfile's stages start FROM, so that docker build needs no registry.
func dockerCanBuild(froms [][]string) bool {
	if exec.Command("docker", "info").Run() != nil {
		return false
	}
	for _, f := range froms {
		if exec.Command("docker", "image", "inspect", f[1]).Run() != nil {
			return false
		}
	}
	return true
}
