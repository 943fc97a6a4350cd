"""A fleet run on the throwaway Slurm cluster stores each partition's audit once, as a
fleet audit of that node type (issue 31; docs/database.md).

The jobs inherit EB_TORCHPERF_DB from the submit host (sbatch exports the environment);
they must not store their audit themselves, or gathering finds it "already there" as a
CLI audit.
"""

import json

from eb_torchperf.store import engine as engines
from eb_torchperf.store.query import history
from .test_fleet_cluster import fleet


def test_fleet_stores_each_partition_once_as_a_fleet_audit(slurm_conf, torch_python, tmp_path,
                                                            monkeypatch, capsys):
    database = tmp_path / "results.sqlite"
    monkeypatch.setenv("EB_TORCHPERF_DB", str(database))
    folder = tmp_path / "fleet"
    status = fleet(torch_python, torch_python, folder)
    assert status in (0, 1), capsys.readouterr()
    stored = [line for line in capsys.readouterr().out.splitlines()
              if line.startswith("stored as audit")]
    url = "sqlite:///%s" % database
    assert stored == ["stored as audit 1 in %s" % url, "stored as audit 2 in %s" % url]
    audits = history(engines.opened(url))
    results = {partition: folder / "results" / ("%s.json" % partition)
               for partition in ("zen", "grace")}
    version = json.loads(results["zen"].read_text())["target"]["facts"]["torch"]["version"]
    build = "torch %s @ %s" % (version, torch_python)
    assert sorted((a.node_type, a.source, a.build, a.results_path) for a in audits) == [
        (partition, "fleet", build, str(results[partition])) for partition in ("grace", "zen")]
