"""Every URDF that example-robot-data ships, in kanedyn and in Pinocchio.

    .venv/bin/python bench/real_urdfs.py [--states N] [--only SUBSTRING]

example-robot-data (the ``bench`` extra) packages 69 robot descriptions as robot
packages ship them: quadrupeds (ANYmal, Solo, Go1/Go2, HyQ, B1, A1), humanoids
(Talos, iCub, Romeo, G1, ...), mobile manipulators (TIAGo, PR2), arms (UR, Panda,
Kinova, xArm, Z1), hands (Allegro, Psyonic). Each file is loaded with a fixed and
with a floating base by ``kd.load_urdf`` and ``pin.buildModelFromUrdf`` (a free
flyer root), the load time of each measured, and M(q) (CRBA) and τ (RNEA) compared
at random states, joints matched by name (Pinocchio orders a link's children by joint
name, kanedyn by document order). Printed per file: whether each side loads, the
number of kanedyn's warnings, the largest difference relative to the largest entry
of Pinocchio's M and τ, and both load times; then the totals.

Coordinate maps as in tests/model/test_urdf_pinocchio.py: Pinocchio's free flyer has
q = (p, x, y, z, w), v = (v, ω), kanedyn's q = (p, w, x, y, z), v = (ω, v); a
continuous joint is (cos θ, sin θ) in Pinocchio's q.

A dummy ``world`` root with a floating base: Pinocchio floats the ``world`` link,
kanedyn the base link fixed to it (their q differ by that fixed offset), so Pinocchio
is given the file without the ``world`` link and its fixed joint, which is the
description kanedyn floats. Planar joints would be reported, not compared (Pinocchio
4.1 ignores their axis; example-robot-data has none).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import numpy as np
import pinocchio as pin

import kanedyn as kd


def robots_dir() -> Path:
    """``share/example-robot-data/robots`` of the installed distribution."""
    dist = metadata.distribution("example-robot-data")
    for f in dist.files or ():
        parts = Path(str(f)).parts
        if "example-robot-data" in parts and parts[-1].endswith(".urdf"):
            k = parts.index("example-robot-data")
            return Path(dist.locate_file(Path(*parts[:k + 2])))
    raise SystemExit("example-robot-data is installed without its robots/ folder")


def maps(model, pmodel):
    """(q ↦ q_pin, iv with v_pin = v[iv]), joints matched by name."""
    pieces, iv = [], []
    for jid in range(1, pmodel.njoints):
        b = model.bodies[model.joint_index(pmodel.names[jid])]
        q0, v0 = b.iq.start, b.iv.start
        if b.joint.kind == "free":
            pieces.append(lambda q, q0=q0: q[[q0, q0 + 1, q0 + 2, q0 + 4, q0 + 5, q0 + 6, q0 + 3]])
            iv += [v0 + 3, v0 + 4, v0 + 5, v0, v0 + 1, v0 + 2]
        elif pmodel.nqs[jid] == 2 and b.joint.nq == 1:
            pieces.append(lambda q, q0=q0: np.array([np.cos(q[q0]), np.sin(q[q0])]))
            iv.append(v0)
        elif pmodel.nqs[jid] == 1 and b.joint.nq == 1:
            pieces.append(lambda q, q0=q0: q[[q0]])
            iv.append(v0)
        else:
            raise NotImplementedError(f"joint {pmodel.names[jid]!r}: "
                                      f"{pmodel.joints[jid].shortname()}")
    return (lambda q: np.concatenate([f(q) for f in pieces]) if pieces else np.zeros(0)), \
        np.array(iv, dtype=int)


def without_world(path: Path, tmp: Path) -> Path:
    """The file without a massless ``world`` root and its one fixed joint (what kanedyn
    floats), or the file itself when its root is not such a link."""
    tree = ET.parse(path)
    root = tree.getroot()
    kids = [j for j in root.findall("joint") if j.find("parent").get("link") == "world"]
    world = [ln for ln in root.findall("link") if ln.get("name") == "world"]
    if not world or world[0].find("inertial") is not None or len(kids) != 1 \
            or kids[0].get("type") != "fixed":
        return path
    root.remove(world[0])
    root.remove(kids[0])
    out = tmp / path.name
    tree.write(out)
    return out


def compare(path: Path, floating: bool, states: int, rng, tmp: Path) -> dict:
    row = {"kd": "", "pin": "", "warn": 0, "dM": np.nan, "dtau": np.nan, "daba": np.nan,
           "t_kd": np.nan, "t_pin": np.nan, "note": ""}
    ppath = without_world(path, tmp) if floating else path
    if ppath != path:
        row["note"] = "Pinocchio given it without the dummy 'world' root; "
    t0 = time.perf_counter()
    try:
        pmodel = (pin.buildModelFromUrdf(str(ppath), pin.JointModelFreeFlyer()) if floating
                  else pin.buildModelFromUrdf(str(path)))
        row["t_pin"] = time.perf_counter() - t0
        row["pin"] = "yes"
    except Exception as e:  # noqa: BLE001 - reported, not hidden
        row["pin"] = f"no ({type(e).__name__})"
        pmodel = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.perf_counter()
        try:
            model = kd.load_urdf(path, floating_base=floating)
            row["t_kd"] = time.perf_counter() - t0
            row["kd"] = "yes"
        except kd.KanedynError as e:
            row["kd"] = "no"
            row["note"] = str(e).replace(str(path), path.name)[:300]
            model = None
    row["warn"] = sum(issubclass(w.category, kd.KanedynWarning) for w in caught)
    if model is None or pmodel is None:
        return row
    if pmodel.nv != model.nv:
        row["note"] = f"nv {model.nv} vs Pinocchio {pmodel.nv}"
        return row
    if any(b.joint.kind == "planar" for b in model.bodies):
        row["note"] = "planar joint: Pinocchio ignores its axis"
        return row
    try:
        to_pin, iv = maps(model, pmodel)
    except NotImplementedError as e:
        row["note"] = f"not compared: {e}"
        return row
    pdata = pmodel.createData()
    singular = bool(kd.model.model.singular_joints(model))
    dM = dtau = daba = 0.0
    for _ in range(states):
        q = kd.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        qp = to_pin(q)
        Mp = pin.crba(pmodel, pdata, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        M = kd.crba(model, q)[np.ix_(iv, iv)]
        dM = max(dM, np.abs(M - Mp).max() / np.abs(Mp).max())
        taup = pin.rnea(pmodel, pdata, qp, v[iv], a[iv])
        tau = kd.rnea(model, q, v, a)[iv]
        dtau = max(dtau, np.abs(tau - taup).max() / max(np.abs(taup).max(), 1e-300))
        if not singular:
            ap = pin.aba(pmodel, pdata, qp, v[iv], taup)
            acc = kd.aba(model, q, v, kd.rnea(model, q, v, a))[iv]
            daba = max(daba, np.abs(acc - ap).max() / max(np.abs(ap).max(), 1e-300))
    row["dM"], row["dtau"] = dM, dtau
    row["daba"] = np.nan if singular else daba
    if singular:
        row["note"] += "singular joints (warned): no ABA"
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--states", type=int, default=3, help="random states per file and base")
    ap.add_argument("--only", default="", help="only files whose path contains this")
    args = ap.parse_args()
    root = robots_dir()
    files = sorted(p for p in root.rglob("*.urdf") if args.only in str(p))
    rng = np.random.default_rng(0)
    print(f"example-robot-data {metadata.version('example-robot-data')}, Pinocchio "
          f"{pin.__version__}, kanedyn {kd.__version__ if hasattr(kd, '__version__') else ''}"
          f"\n{len(files)} URDFs in {root}\n")
    head = (f"{'file':44s} {'base':8s} {'kd':3s} {'warn':>4s} {'pin':4s} {'dM':>8s} "
            f"{'dtau':>8s} {'daba':>8s} {'kd ms':>7s} {'pin ms':>7s}  note")
    print(head)
    print("-" * len(head))
    rows = []
    tmp = Path(tempfile.mkdtemp())
    for f in files:
        for floating in (False, True):
            r = compare(f, floating, args.states, rng, tmp)
            r["file"], r["floating"] = str(f.relative_to(root)), floating
            rows.append(r)
            print(f"{r['file'][:44]:44s} {'floating' if floating else 'fixed':8s} "
                  f"{r['kd']:3s} {r['warn']:4d} {r['pin'][:4]:4s} {r['dM']:8.1e} "
                  f"{r['dtau']:8.1e} {r['daba']:8.1e} {1e3 * r['t_kd']:7.1f} "
                  f"{1e3 * r['t_pin']:7.1f}  {r['note']}", flush=True)
    print()
    for floating in (False, True):
        sel = [r for r in rows if r["floating"] == floating]
        loads = sum(r["kd"] == "yes" for r in sel)
        pins = sum(r["pin"] == "yes" for r in sel)
        cmp_ = [r for r in sel if np.isfinite(r["dM"])]
        agree = [r for r in cmp_ if max(r["dM"], r["dtau"],
                                        0.0 if np.isnan(r["daba"]) else r["daba"]) <= 1e-9]
        t_kd = np.nanmedian([r["t_kd"] for r in sel])
        t_pin = np.nanmedian([r["t_pin"] for r in sel])
        print(f"{'floating' if floating else 'fixed'} base: kanedyn loads {loads}/{len(sel)}, "
              f"Pinocchio {pins}/{len(sel)}; compared {len(cmp_)}, agree to 1e-9: "
              f"{len(agree)}; median load {1e3 * t_kd:.1f} ms (kanedyn) vs "
              f"{1e3 * t_pin:.1f} ms (Pinocchio)")
        for r in sel:
            if r["kd"] != "yes":
                print(f"  does not load: {r['file']}: {r['note']}")
            elif r in cmp_ and r not in agree:
                print(f"  differs: {r['file']}: dM {r['dM']:.1e}, dtau {r['dtau']:.1e}")
            elif r not in cmp_:
                print(f"  not compared: {r['file']}: {r['note']}")


if __name__ == "__main__":
    main()
