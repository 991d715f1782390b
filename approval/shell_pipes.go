package approval

import "strings"

// downloaders fetch data from the network.
var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true, "http": true, "https": true,
	"aria2c": true, "lwp-request": true, "GET": true}

// readsScript reports whether a command runs code it reads from its
// input: a shell or an interpreter with no script file and no -c/-e.
func readsScript(name string, words []ShellWord) bool {
	switch {
	case isShell(name):
		return shellCArg(words) == 0 && scriptArg(words) == 0
	case isInterpreter(name):
		for _, w := range words[1:] {
			if w.Literal && (w.Value == "-" || w.Value == "-s") {
				return true
			}
			if !w.Literal || !strings.HasPrefix(w.Value, "-") {
				return false
			}
			if w.Value == "-c" || w.Value == "-e" || w.Value == "-m" {
				return false
			}
		}
		return true
	}
	return false
}

// downloadRuns flags a shell or eval that runs what a substitution in its
// words downloads: bash <(curl …), sh -c "$(curl …)", eval "$(wget …)".
func (w *shellWalker) downloadRuns(f *flagger, i int, name string, text func() string) {
	if !isShell(name) && !isInterpreter(name) && name != "eval" && name != "source" && name != "." {
		return
	}
	r, ok := w.wordSubs[i]
	if !ok {
		return
	}
	if w.downloads(r[0], r[1]) {
		f.add(FlagDownloadRun, "Runs code downloaded from the network", text(), "")
	}
}

// downloads reports whether a command in w.cmds[from:to] downloads. The
// counts are taken once, so that nested pipes and substitutions cost a
// look each, not a walk over what they enclose.
func (w *shellWalker) downloads(from, to int) bool {
	if w.downloaders == nil {
		w.downloaders = make([]int, len(w.cmds)+1)
		for i, c := range w.cmds {
			w.downloaders[i+1] = w.downloaders[i]
			if ws, _ := unwrap(c.Words); len(ws) > 0 && downloaders[commandName(ws[0])] {
				w.downloaders[i+1]++
			}
		}
	}
	return w.downloaders[to] > w.downloaders[from]
}

// pipeFlags flags a pipe into a shell, and a download piped into one.
func (w *shellWalker) pipeFlags(f *flagger) {
	for _, p := range w.pipes {
		download := w.downloads(p[0], p[1])
		for i, c := range w.cmds[p[1]:p[2]] {
			ws, _ := unwrap(c.Words)
			if len(ws) == 0 || !readsScript(commandName(ws[0]), ws) {
				continue
			}
			sep := " | "
			if p[1]-p[0] > 1 || i > 0 { // commands in between are left out
				sep = " … | "
			}
			text := joinTexts(w.cmds[p[0]].Words) + sep + c.Text()
			if download {
				f.add(FlagDownloadRun, "Runs code downloaded from the network", text, "")
			} else {
				f.add(FlagPipeToShell, "Pipes text into a shell, which runs it", text, "")
			}
		}
	}
}
