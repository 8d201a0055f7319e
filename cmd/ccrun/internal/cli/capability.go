package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/shellcmd"
)

func (a *app) capabilityCommand() *cobra.Command {
	c := &cobra.Command{
		Use:     "capability",
		Aliases: []string{"cap"},
		Short:   "List, validate and scaffold capabilities (.ccrun/capabilities/NAME/)",
	}
	var listJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the project's capabilities",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			caps, errs := rt.Capabilities() // those of an environment it does not run among the errors
			if listJSON {
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
		},
	}
	list.Flags().BoolVar(&listJSON, "json", false, "print the capabilities as JSON (those that do not load under \"errors\")")
	validate := &cobra.Command{
		Use:   "validate [NAME]",
		Short: "Check one capability, or all of them, against the schema, the file system and the environments this ccrun runs",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			if len(args) == 1 {
				capa, err := capabilities.Find(rt.ProjectDir(), args[0])
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
		},
	}
	var env string
	newCmd := &cobra.Command{
		Use:   "new NAME --env @wasm|@shell|@docker|@ENV",
		Short: "Write a new capability that validates and runs as written",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			rt, err := a.adminRuntime()
			if err != nil {
				return err
			}
			defer rt.Close()
			e, err := rt.Environments().Parse(env)
			if err != nil {
				return usageError{err}
			}
			out, err := rt.Scaffold(c.Context(), args[0], e)
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
			fmt.Fprintf(a.io.out, "run it: ccrun exec %s\n", args[0])
			return nil
		},
	}
	newCmd.Flags().StringVar(&env, "env", "", "the environment: @wasm, @shell, @docker or one this ccrun adds (required)")
	_ = newCmd.RegisterFlagCompletionFunc("env", a.completeEnvironments)
	validate.ValidArgsFunction = a.completeCapabilities
	_ = newCmd.MarkFlagRequired("env")
	c.AddCommand(list, validate, newCmd)
	return c
}
