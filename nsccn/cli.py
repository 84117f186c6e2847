"""`python -m nsccn.cli`: the `nsccn` command, for the scripts and benchmarks that start it so.

The command line lives above the library, beside the processes it starts (`nsccn_cli`: index,
serve, stop, worker, and the query commands built from nsccn.serving.tools); the library imports
nothing from there, so this only hands the program over when run as one.
"""

if __name__ == "__main__":
    import runpy

    runpy.run_module("nsccn_cli", run_name="__main__", alter_sys=True)
