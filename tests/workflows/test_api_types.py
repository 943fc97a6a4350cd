"""Issue 27 item 20: the Python API checks the types of what it is given."""

import pathlib

import pytest

import eb_torchperf
from eb_torchperf.errors import ConfigError


def test_path_target_one_name_and_number_env_values_are_taken(tmp_path, wheel_python):
    result = eb_torchperf.audit(pathlib.Path(wheel_python), reference="none", pairs=1,
                                only="dispatch", devices="cpu",
                                target_env={"OMP_NUM_THREADS": 1},
                                out=tmp_path / "run.json")
    assert {r.bench for r in result.results} == {"dispatch"}  # not d, i, s, p, ...
    assert result.options["target_env"] == {"OMP_NUM_THREADS": "1"}
    assert eb_torchperf.load_results(tmp_path / "run.json").complete


@pytest.mark.parametrize("options, message", [
    (dict(pairs=1.5), "--pairs must be a whole number of worker pairs, not 1.5"),
    (dict(pairs=True), "--pairs must be a whole number of worker pairs, not True"),
    (dict(pairs=10 ** 20), "--pairs must be at most 1000 (a thousand pairs take hours), "
                           "not 100000000000000000000"),
    (dict(timeout_s="5"), "--timeout must be a number of seconds, not '5'"),
    (dict(target_env={"OMP_NUM_THREADS": [4]}),
     "environment override OMP_NUM_THREADS must be a string, a number or None (remove "
     "it), not list [4]"),
])
def test_bad_types_are_one_clear_config_error(options, message):
    with pytest.raises(ConfigError) as caught:
        eb_torchperf.audit("/bin/sh", reference="none", **options)
    assert str(caught.value) == message
