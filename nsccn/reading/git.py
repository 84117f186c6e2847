"""Every git command nsccn runs, built by one function (`git_command`).

A repository is untrusted input, and a repository delivered with its `.git` directory brings its
own `.git/config`: keys there can make git run programs (`gpg.program` under
`log.showSignature`, `core.fsmonitor`, `diff.external`, textconv drivers, pagers, askpass and
credential helpers, `core.sshCommand`) or fetch (a "partial clone" whose promisor remote's
`uploadpack` is a program: `git log -p` fetches a missing blob lazily and runs it). Config given
on the command line wins over every config file, so each such key is set here to something
inert; the environment turns lazy fetching and every transport off, and git's own variables of
the caller (GIT_DIR, GIT_EXTERNAL_DIFF, ...) are not passed on. Checked against git 2.39.5,
which honours GIT_NO_LAZY_FETCH (a security backport); `protocol.allow=never` stops the fetch on
gits that do not.
"""

from __future__ import annotations

import os
from pathlib import Path

INERT_CONFIG = (
    "core.fsmonitor=false",  # a program run to list changed files
    "core.hooksPath=/dev/null",  # hooks
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=false",
    "core.gitProxy=",
    "credential.helper=",  # an empty value clears the list of helpers
    "diff.external=",  # an external diff program (also --no-ext-diff)
    "log.showSignature=false",  # gpg.program (or gpg.ssh.program) would run on each signed commit
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "protocol.allow=never",  # no transport at all: no lazy fetch of a promisor remote, no submodule fetch
    "fetch.recurseSubmodules=false",
    "submodule.recurse=false",
    # What would change the text we parse: one path per line, the prefixes we read, UTF-8.
    "core.quotePath=true",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "i18n.logOutputEncoding=UTF-8",
    "color.ui=false",
)

INERT_ENV = {
    "GIT_NO_LAZY_FETCH": "1",
    "GIT_ALLOW_PROTOCOL": "",  # an empty allow-list: every transport refused
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",  # set and empty: neither core.askPass nor SSH_ASKPASS is tried
    "GIT_PAGER": "cat",
    "GIT_NO_REPLACE_OBJECTS": "1",  # refs/replace/ would let a repository show one commit as another
    "GIT_OPTIONAL_LOCKS": "0",  # reading never rewrites the repository's index
}


def git_command(root: Path | str, *args: str, config: tuple[str, ...] = ()) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) of `git -C root <args>` with every key a repository's config could use
    to run a program or fetch made inert; `config`: more `-c key=value` of the caller's."""
    cmd = ["git", "--no-pager", "-C", str(root)]
    for item in (*INERT_CONFIG, *config):
        cmd += ["-c", item]
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(INERT_ENV)
    # Never a repository above the root: discovery stops at its parent.
    env["GIT_CEILING_DIRECTORIES"] = str(Path(root).resolve().parent)
    if args and args[0] == "log":
        args = ("log", "--no-show-signature", "--no-ext-diff", "--no-textconv", "--no-color", *args[1:])
    return [*cmd, *args], env
