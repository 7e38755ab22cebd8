"""The bundled models' manifest (models/manifest.json) as the bench scripts read it."""


def input_shapes(flags):
    """{input name: dims} of a manifest entry's input_shape_flags ("name=1,128")."""
    shapes = {}
    for flag in flags:
        name, dims = flag.rsplit("=", 1)
        shapes[name] = [int(d) for d in dims.split(",")]
    return shapes
