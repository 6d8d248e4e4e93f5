"""Command groups as every ``workbench`` group behaves."""

from __future__ import annotations

import click


class HelpWhenBareGroup(click.Group):
    """A group that, typed without a subcommand, prints its help as ``--help`` does and exits 0.
    (click would raise that as a usage error, which ``workbench`` prints as one error line.)"""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and self.no_args_is_help and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return super().parse_args(ctx, args)
