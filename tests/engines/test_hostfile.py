"""Hostfiles in Pwrake and MPI styles; bad lines named with their line numbers."""
import pytest

from manybench.engines.hostfile import HostfileError, parse_hostfile


def test_pwrake_and_mpi_styles_and_comments():
    text = "# nodes\nnode01 8\nnode02 slots=4   # mpi\n\nnode03\n"
    assert parse_hostfile(text) == [("node01", 8), ("node02", 4), ("node03", None)]


@pytest.mark.parametrize("text, needle", [
    ("node01 eight\n", ":1:"),
    ("node01 4\nnode01 2\n", "listed twice"),
    ("node01 0\n", "at least 1"),
    ("# nothing\n", "no hosts"),
])
def test_bad_hostfiles_name_the_line(text, needle):
    with pytest.raises(HostfileError) as e:
        parse_hostfile(text, "hosts.txt")
    assert needle in str(e.value)
