package ops_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// argoHealthStatuses are the statuses Argo CD accepts from a health
// script; any other makes Argo CD report Unknown.
var argoHealthStatuses = []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}

// healthStatus is what a health script returns.
type healthStatus struct {
	Status  string
	Message string
}

// runHealthScript runs an Argo CD health script against obj as Argo CD
// runs one: a fresh gopher-lua state with only the package, base and table
// libraries open (Argo CD adds a restricted os, which the scripts do not
// use, and no string or math library), obj as the global "obj", a
// one-second deadline, and a table with a known status as the result.
func runHealthScript(script string, obj map[string]any) (healthStatus, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return healthStatus{}, fmt.Errorf("opening %s: %w", lib.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return healthStatus{}, fmt.Errorf("running the script: %w", err)
	}
	table, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return healthStatus{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	hs := healthStatus{Status: lua.LVAsString(table.RawGetString("status")), Message: lua.LVAsString(table.RawGetString("message"))}
	if !slices.Contains(argoHealthStatuses, hs.Status) {
		return hs, fmt.Errorf("the script returned status %q, which Argo CD reports as Unknown", hs.Status)
	}
	return hs, nil
}

// toLua converts a decoded JSON value into Lua as Argo CD does: objects and
// arrays become tables (arrays indexed from 1), numbers numbers.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := l.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(l, e))
		}
		return t
	case []any:
		t := l.NewTable()
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	default:
		panic(fmt.Sprintf("no Lua value for %T", v))
	}
}

// healthScript reads the health script of kind from deploy/argocd.
func healthScript(kind string) (string, error) {
	data, err := os.ReadFile(filepath.Join(argoCDDir, kind+".lua"))
	return string(data), err
}
