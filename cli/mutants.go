package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pmlin/pmlin/mwcas"
)

func mutantsCommand(e env) *cobra.Command {
	return &cobra.Command{
		Use:   "mutants",
		Short: "List the planted bugs that --mutant accepts",
		Long: `mutants lists the planted bugs of the built-in PMwCAS that run and fuzz accept
with --mutant, one per line: NAME, two spaces, a description.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, m := range mwcas.Mutants() {
				fmt.Fprintf(e.stdout, "%s  %s\n", m.Name, m.Description)
			}
			return nil
		},
	}
}
