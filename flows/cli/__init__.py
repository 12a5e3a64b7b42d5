"""The ``evidence-stage`` command line: ``main.py`` parses, one module per subcommand acts."""
