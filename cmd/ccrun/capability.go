package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ccrun/ccrun/capabilities"
	"github.com/ccrun/ccrun/ceiling"
	"github.com/ccrun/ccrun/permission"
)

func (a *app) capabilityCommand() *cobra.Command {
	c := &cobra.Command{
		Use:     "capability",
		Aliases: []string{"cap"},
		Short:   "List, validate and scaffold capabilities (.ccrun/capabilities/NAME/)",
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the project's capabilities",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dir, err := a.project()
			if err != nil {
				return err
			}
			caps, errs := capabilities.LoadAll(dir)
			for _, c := range caps {
				fmt.Fprintf(a.io.out, "%-24s %-8s %s\n", c.Manifest.Name, c.Manifest.Environment, permission.Escape(c.Manifest.Description))
			}
			for _, err := range errs {
				fmt.Fprintf(a.io.err, "ccrun: %v\n", err)
			}
			if len(errs) > 0 {
				return fmt.Errorf("%d capabilities do not load: %w", len(errs), errors.Join(errs...))
			}
			return nil
		},
	}
	validate := &cobra.Command{
		Use:   "validate [NAME]",
		Short: "Check one capability, or all of them, against the schema and the file system",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			dir, err := a.project()
			if err != nil {
				return err
			}
			if len(args) == 1 {
				capa, err := capabilities.Find(dir, args[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(a.io.out, "%s: ok (%s)\n", capa.Manifest.Name, capa.Digest)
				return nil
			}
			caps, errs := capabilities.LoadAll(dir)
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
		Use:   "new NAME --env @wasm|@shell|@docker",
		Short: "Write a new capability that validates and runs as written",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			e, err := ceiling.ParseEnvironment(env)
			if err != nil {
				return usageError{err}
			}
			dir, err := a.project()
			if err != nil {
				return err
			}
			out, err := capabilities.Scaffold(dir, args[0], e)
			if err != nil {
				if errors.Is(err, capabilities.ErrInvalidArgument) {
					return usageError{err}
				}
				return err
			}
			fmt.Fprintf(a.io.out, "wrote %s\nrun it: ccrun exec %s\n", out, args[0])
			return nil
		},
	}
	newCmd.Flags().StringVar(&env, "env", "", "the environment: @wasm, @shell or @docker (required)")
	_ = newCmd.MarkFlagRequired("env")
	c.AddCommand(list, validate, newCmd)
	return c
}
