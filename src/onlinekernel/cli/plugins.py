"""``onlinekernel plugins``: list the registered losses and feature maps."""
import json


def add_parser(subparsers):
    """The ``plugins`` command's options."""
    plugins = subparsers.add_parser("plugins", help="list the registered losses and feature maps",
                                    description="List every registered loss and feature map with "
                                                "its parameters (defaults) and distribution.")
    plugins.add_argument("--json", action="store_true", help="machine-readable output")
    return plugins


def run(args, out, err):
    """Print the tables of losses and feature maps; return the exit status."""
    import onlinekernel

    tables = {"losses": onlinekernel.available_losses(),
              "feature_maps": onlinekernel.available_feature_maps()}
    if args.json:
        print(json.dumps(tables, indent=2, sort_keys=True, default=repr), file=out)
        return 0
    for title, key in (("losses", "losses"), ("feature maps", "feature_maps")):
        rows = [(name, ", ".join(f"{k}={v!r}" for k, v in info["parameters"].items()) or "-",
                 f"{info['distribution']} ({info['plugin']})")
                for name, info in tables[key].items()]
        print(f"{title}:", file=out)
        w0 = max((len(r[0]) for r in rows), default=0)
        w1 = max((len(r[1]) for r in rows), default=0)
        for name, params, origin in rows:
            print(f"  {name:<{w0}}  {params:<{w1}}  {origin}", file=out)
    return 0
