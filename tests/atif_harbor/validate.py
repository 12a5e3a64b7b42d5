"""Run inside the harbor venv: validate every ATIF file named on stdin (one path a line).

Prints one JSON object ``{path: [error, ...]}``; an empty list means harbor accepts the file.
"""

import json
import sys

from harbor.utils.trajectory_validator import TrajectoryValidator


def main() -> None:
    report = {}
    for path in sys.stdin.read().splitlines():
        validator = TrajectoryValidator()
        valid = validator.validate(path, validate_images=False)
        errors = [str(error) for error in validator.get_errors()]
        report[path] = errors if errors or valid else ["invalid without a message"]
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main()
