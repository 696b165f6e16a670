"""Conventions: the type stub covers the package, public names have
docstrings, reprs say what a user needs, and the package imports from the
build tree the README names."""
import ast
import inspect
import pathlib

import neat

STUB = pathlib.Path(neat.__file__).with_name("__init__.pyi")


def stub_names():
    tree = ast.parse(STUB.read_text())
    names, members = set(), {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        if isinstance(node, ast.ClassDef):
            members[node.name] = {n.name for n in node.body if isinstance(n, ast.FunctionDef)} | {
                t.id for n in node.body if isinstance(n, ast.AnnAssign)
                for t in [n.target] if isinstance(t, ast.Name)}
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names, members


def test_the_stub_ships_with_the_package_and_covers_every_public_name():
    assert STUB.exists() and STUB.with_name("py.typed").exists()
    names, members = stub_names()
    missing = [n for n in neat.__all__ if n not in names]
    assert not missing, f"not in __init__.pyi: {missing}"
    for cls_name, declared in members.items():
        cls = getattr(neat, cls_name)
        public = {n for n in vars(cls) if not n.startswith("_")}
        if issubclass(cls, neat.Error) and cls is not neat.Error:
            public -= {"code"}  # each code class sets the `code` Error declares
        undeclared = public - declared
        assert not undeclared, f"{cls_name}: not in the stub: {sorted(undeclared)}"
        instance_attrs = {"message", "fix"} if issubclass(cls, Exception) else set()
        stale = {n for n in declared
                 if not n.startswith("_") and not hasattr(cls, n) and n not in instance_attrs}
        assert not stale, f"{cls_name}: in the stub but not in the package: {sorted(stale)}"


def test_public_functions_and_classes_have_docstrings():
    undocumented = [n for n in neat.__all__
                    if not (inspect.getdoc(getattr(neat, n)) or "").strip()]
    assert not undocumented, undocumented


def test_names_read_as_neat_x():
    assert repr(neat.Tensor).endswith("'neat.Tensor'>")
    assert neat.InvalidArgument.__module__ == "neat"
    g = neat.Graph("g")
    assert repr(g) == "neat.Graph('g', declared)"
    assert repr(neat.AppSink(capacity=2)) == "neat.AppSink(<not in a graph>, capacity 2)"
    assert repr(neat.FrameSpec.image("NV12", 64, 48)).startswith("neat.FrameSpec(NV12 64x48")
    assert repr(neat.element("resize", size=(64, 48))) == "neat.Element(resize size=64x48)"
