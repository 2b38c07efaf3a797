// helm-render renders a Helm chart the way `helm template` does, for the deploy-files test on a
// machine where helm itself cannot be installed (it is in neither Debian nor npm): Go's
// text/template with Sprig's functions (Debian golang-github-masterminds-sprig-dev, the library
// helm uses) plus helm's own toYaml, include and required; every file of templates/ parsed into
// one set, values.yaml deep-merged with each -f file, missing keys rendered empty.
//
//	helm-render CHART_DIR RELEASE NAMESPACE [-f VALUES.yaml]...
//
// Output: each rendered manifest after "---\n# Source: <chart>/templates/<file>\n", then NOTES.txt
// after "# NOTES:\n".
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml "gopkg.in/yaml.v2"
)

func main() {
	if len(os.Args) < 4 {
		fail("usage: helm-render CHART_DIR RELEASE NAMESPACE [-f VALUES.yaml]...")
	}
	chartDir, release, namespace := os.Args[1], os.Args[2], os.Args[3]
	chart := readYaml(filepath.Join(chartDir, "Chart.yaml"))
	values := readYaml(filepath.Join(chartDir, "values.yaml"))
	for i := 4; i < len(os.Args); i++ {
		if os.Args[i] != "-f" || i+1 >= len(os.Args) {
			fail("expected -f FILE, got " + os.Args[i])
		}
		i++
		values = merge(values, readYaml(os.Args[i]))
	}
	data := map[string]interface{}{
		"Values":  values,
		"Release": map[string]interface{}{"Name": release, "Namespace": namespace, "Service": "Helm", "IsInstall": true, "Revision": 1},
		"Chart":   map[string]interface{}{"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"]},
	}
	set := template.New("chart").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	funcs["toYaml"] = func(v interface{}) string {
		out, err := yaml.Marshal(v)
		if err != nil {
			return ""
		}
		return strings.TrimSuffix(string(out), "\n")
	}
	funcs["include"] = func(name string, v interface{}) (string, error) {
		var buf bytes.Buffer
		err := set.ExecuteTemplate(&buf, name, v)
		return buf.String(), err
	}
	funcs["required"] = func(message string, v interface{}) (interface{}, error) {
		if v == nil || v == "" {
			return nil, fmt.Errorf("%s", message)
		}
		return v, nil
	}
	set.Funcs(funcs)
	files, _ := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	sort.Strings(files)
	for _, file := range files {
		text, err := os.ReadFile(file)
		if err != nil {
			fail(err.Error())
		}
		if _, err := set.New(filepath.Base(file)).Parse(string(text)); err != nil {
			fail(err.Error())
		}
	}
	name := fmt.Sprint(chart["name"])
	var notes string
	for _, file := range files {
		base := filepath.Base(file)
		if strings.HasPrefix(base, "_") {
			continue
		}
		var buf bytes.Buffer
		if err := set.ExecuteTemplate(&buf, base, data); err != nil {
			fail(err.Error())
		}
		out := strings.ReplaceAll(buf.String(), "<no value>", "")
		if base == "NOTES.txt" {
			notes = out
			continue
		}
		fmt.Printf("---\n# Source: %s/templates/%s\n%s\n", name, base, out)
	}
	fmt.Printf("# NOTES:\n%s", notes)
}

func readYaml(path string) map[string]interface{} {
	text, err := os.ReadFile(path)
	if err != nil {
		fail(err.Error())
	}
	var raw interface{}
	if err := yaml.Unmarshal(text, &raw); err != nil {
		fail(path + ": " + err.Error())
	}
	out, _ := plain(raw).(map[string]interface{})
	if out == nil {
		out = map[string]interface{}{}
	}
	return out
}

// plain turns yaml.v2's map[interface{}]interface{} into map[string]interface{}, as helm's values are.
func plain(v interface{}) interface{} {
	switch t := v.(type) {
	case map[interface{}]interface{}:
		out := map[string]interface{}{}
		for k, e := range t {
			out[fmt.Sprint(k)] = plain(e)
		}
		return out
	case []interface{}:
		for i, e := range t {
			t[i] = plain(e)
		}
		return t
	}
	return v
}

func merge(base, over map[string]interface{}) map[string]interface{} {
	for k, v := range over {
		if sub, ok := v.(map[string]interface{}); ok {
			if into, ok := base[k].(map[string]interface{}); ok {
				base[k] = merge(into, sub)
				continue
			}
		}
		base[k] = v
	}
	return base
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "helm-render: "+message)
	os.Exit(1)
}
