package main

// This file holds -chat-template: the chat templates read from files and
// given to the models they are for.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/template"

	"example.org/minigpt/server"
)

// maxTemplateBytes bounds a chat template file: a template is a few lines.
const maxTemplateBytes = 1 << 20

// templateFlags collects repeated -chat-template flags, as given: file,
// or name=file. Which is which waits for the models' names (see apply).
type templateFlags []string

func (t *templateFlags) String() string { return strings.Join(*t, ",") }

func (t *templateFlags) Set(v string) error {
	if v == "" {
		return errors.New("want a file or name=file")
	}
	*t = append(*t, v)
	return nil
}

// apply reads each template and sets it on its models: name=file for the
// model called name (when name is one of models), otherwise the whole
// value is a file for every model that names none of its own. Each file
// must parse as a Go text/template.
func (t templateFlags) apply(models []server.Model) error {
	byName := map[string]int{}
	for i, m := range models {
		byName[m.Name] = i
	}
	all, set := "", map[string]bool{}
	for _, v := range t {
		name, file, ok := strings.Cut(v, "=")
		i, named := byName[name]
		if !ok || !named {
			if all != "" {
				return fmt.Errorf("-chat-template %s: a template for every model is given twice (name=file gives one model its own)", v)
			}
			text, err := readTemplate(v)
			if err != nil {
				return err
			}
			all = text
			continue
		}
		if set[name] {
			return fmt.Errorf("-chat-template %s: model %s has a template already", v, name)
		}
		text, err := readTemplate(file)
		if err != nil {
			return err
		}
		models[i].ChatTemplate, set[name] = text, true
	}
	for i := range models {
		if !set[models[i].Name] {
			models[i].ChatTemplate = all
		}
	}
	return nil
}

// readTemplate reads and parses the chat template in file.
func readTemplate(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("-chat-template: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTemplateBytes+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("-chat-template %s: %w", file, err)
	case len(b) > maxTemplateBytes:
		return "", fmt.Errorf("-chat-template %s: larger than %d bytes: a template is a few lines", file, maxTemplateBytes)
	case len(strings.TrimSpace(string(b))) == 0:
		return "", fmt.Errorf("-chat-template %s: the file is empty", file)
	}
	if _, err := template.New(file).Parse(string(b)); err != nil {
		return "", fmt.Errorf("-chat-template %s: %w", file, err)
	}
	return string(b), nil
}
