package cli

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/shellcmd"
)

// capabilityCommand is `ccrun capability`: list, validate and new, each
// parsed into its options and run by its run function.
func (a *app) capabilityCommand() *cobra.Command {
	c := &cobra.Command{
		Use:     "capability",
		Aliases: []string{"cap"},
		Short:   "List, validate and scaffold capabilities (.ccrun/capabilities/NAME/)",
	}
	c.AddCommand(a.capabilityListCommand(nil), a.capabilityValidateCommand(nil), a.capabilityNewCommand(nil))
	return c
}

// capabilityListOptions are `ccrun capability list`'s flags.
type capabilityListOptions struct {
	json bool // --json
}

// capabilityListCommand parses `capability list` into its options and
// calls runF with them (nil: runCapabilityList).
func (a *app) capabilityListCommand(runF func(context.Context, *capabilityListOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runCapabilityList
	}
	o := &capabilityListOptions{}
	c := &cobra.Command{
		Use:   "list",
		Short: "List the project's capabilities",
		Args:  cobra.NoArgs,
		RunE:  func(c *cobra.Command, _ []string) error { return runF(c.Context(), o) },
	}
	c.Flags().BoolVar(&o.json, "json", false, "print the capabilities as JSON (those that do not load under \"errors\")")
	return c
}

// runCapabilityList lists the project's capabilities; one that does not
// load is reported, and makes the command fail.
func (a *app) runCapabilityList(_ context.Context, o *capabilityListOptions) error {
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	caps, errs := rt.Capabilities() // those of an environment it does not run among the errors
	if o.json {
		r := capabilitiesReport{Capabilities: []capabilityReport{}, Errors: []string{}}
		for _, c := range caps {
			m := &c.Manifest
			r.Capabilities = append(r.Capabilities, capabilityReport{Name: m.Name, Environment: string(m.Environment),
				Description: m.Description, Digest: c.Digest, Dir: c.Dir})
		}
		for _, err := range errs {
			r.Errors = append(r.Errors, err.Error())
		}
		if err := writeJSON(a.io.out, r); err != nil {
			return err
		}
	} else {
		for _, c := range caps {
			fmt.Fprintf(a.io.out, "%-24s %-8s %s\n", c.Manifest.Name, c.Manifest.Environment, shellcmd.Escape(c.Manifest.Description))
		}
		for _, err := range errs {
			fmt.Fprintf(a.io.err, "ccrun: %v\n", err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s not load: %w", plural(len(errs), "capability does", "capabilities do"), errors.Join(errs...))
	}
	return nil
}

// capabilityValidateOptions are `ccrun capability validate`'s arguments.
type capabilityValidateOptions struct {
	name string // the capability to check; "": every one
}

// capabilityValidateCommand parses `capability validate` into its
// options and calls runF with them (nil: runCapabilityValidate).
func (a *app) capabilityValidateCommand(runF func(context.Context, *capabilityValidateOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runCapabilityValidate
	}
	return &cobra.Command{
		Use:               "validate [NAME]",
		Short:             "Check one capability, or all of them, against the schema, the file system and the environments this ccrun runs",
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: a.completeCapabilities,
		RunE: func(c *cobra.Command, args []string) error {
			o := &capabilityValidateOptions{}
			if len(args) == 1 {
				o.name = args[0]
			}
			return runF(c.Context(), o)
		},
	}
}

// runCapabilityValidate checks one capability, or every one.
func (a *app) runCapabilityValidate(_ context.Context, o *capabilityValidateOptions) error {
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	if o.name != "" {
		capa, err := capabilities.Find(rt.ProjectDir(), o.name)
		if err == nil {
			err = capa.CheckEnvironment(rt.Environments())
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(a.io.out, "%s: ok (%s)\n", capa.Manifest.Name, capa.Digest)
		return nil
	}
	caps, errs := rt.Capabilities()
	for _, c := range caps {
		fmt.Fprintf(a.io.out, "%s: ok (%s)\n", c.Manifest.Name, c.Digest)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return nil
}

// capabilityNewOptions are `ccrun capability new`'s flags and argument.
type capabilityNewOptions struct {
	name string // NAME
	env  string // --env
}

// capabilityNewCommand parses `capability new` into its options and
// calls runF with them (nil: runCapabilityNew).
func (a *app) capabilityNewCommand(runF func(context.Context, *capabilityNewOptions) error) *cobra.Command {
	if runF == nil {
		runF = a.runCapabilityNew
	}
	o := &capabilityNewOptions{}
	c := &cobra.Command{
		Use:   "new NAME --env @wasm|@shell|@docker|@ENV",
		Short: "Write a new capability that validates and runs as written",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.name = args[0]
			return runF(c.Context(), o)
		},
	}
	c.Flags().StringVar(&o.env, "env", "", "the environment: @wasm, @shell, @docker or one this ccrun adds (required)")
	_ = c.RegisterFlagCompletionFunc("env", a.completeEnvironments)
	_ = c.MarkFlagRequired("env")
	return c
}

// runCapabilityNew writes a new capability that validates and runs as
// written.
func (a *app) runCapabilityNew(ctx context.Context, o *capabilityNewOptions) error {
	rt, err := a.adminRuntime()
	if err != nil {
		return err
	}
	defer rt.Close()
	e, err := rt.Environments().Parse(o.env)
	if err != nil {
		return usageError{err}
	}
	out, err := rt.Scaffold(ctx, o.name, e)
	if err != nil {
		if errors.Is(err, capabilities.ErrInvalidArgument) {
			return usageError{err}
		}
		return err
	}
	fmt.Fprintf(a.io.out, "wrote %s\n", out)
	if e == ceiling.Docker {
		fmt.Fprintf(a.io.out, "it runs the image %s: build it from ccrun's source tree with `make testimage`,\n"+
			"or set \"image\" in %s to an image you have (docker pull busybox, then \"image\": \"busybox\")\n",
			capabilities.ScaffoldImage, filepath.Join(out, capabilities.ManifestFile))
	}
	fmt.Fprintf(a.io.out, "run it: ccrun exec %s\n", o.name)
	return nil
}
