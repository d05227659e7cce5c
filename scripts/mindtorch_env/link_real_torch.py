"""Links the main environment's real torch, and what it requires, into one folder of the MSAdapter venv.

Why: the MSAdapter test environment needs the real torch as the generated scripts' bench, in the
same process as MSAdapter's torch. Instead of a second 5 GB torch, the folder gets symbolic links
to the installed files of torch and of every distribution it requires (found through the package
metadata of the main environment), except the distributions the MSAdapter venv has itself (its
own numpy, typing-extensions, ...); a ``.pth`` file puts the folder at the end of ``sys.path``, so
MSAdapter's venv wins every name both have.

    python link_real_torch.py MAIN_SITE_PACKAGES LINK_FOLDER

Run with the MSAdapter venv's python. Prints the linked distributions.
"""

import importlib.metadata as metadata
import os
import re
import shutil
import sys

from packaging.requirements import Requirement


def canonical(name):
    """PEP 503 normalised distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(main_site, root="torch"):
    """The distributions of main_site that root needs, with the extras asked of each."""
    found = {canonical(d.metadata["Name"]): d for d in metadata.distributions(path=[main_site])}
    needed, todo = {}, [(canonical(root), frozenset())]
    while todo:
        name, extras = todo.pop()
        have = needed.get(name)
        if name not in found or (have is not None and extras <= have):
            continue
        needed[name] = (have or frozenset()) | extras
        for text in found[name].requires or []:
            req = Requirement(text)
            asked = needed[name] | {""}
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in asked):
                continue
            todo.append((canonical(req.name), frozenset(req.extras)))
    return [found[n] for n in sorted(needed)]


def top_level_entries(dist):
    """The entries of site-packages that a distribution installed (packages, modules, dist-info)."""
    entries = set()
    for path in dist.files or []:
        head = path.parts[0]
        if head != "..":
            entries.add(head)
    return entries


def main():
    main_site, link_dir = sys.argv[1], sys.argv[2]
    # what the venv has itself: sys.path without the folder that an earlier run linked
    own_path = [p for p in sys.path if os.path.realpath(p) != os.path.realpath(link_dir)]
    own = {canonical(d.metadata["Name"]) for d in metadata.distributions(path=own_path)}
    shutil.rmtree(link_dir, ignore_errors=True)
    os.makedirs(link_dir)
    for dist in closure(main_site):
        name = canonical(dist.metadata["Name"])
        if name in own:
            continue
        for entry in sorted(top_level_entries(dist)):
            target = os.path.join(main_site, entry)
            link = os.path.join(link_dir, entry)
            if os.path.exists(target) and not os.path.lexists(link):
                os.symlink(target, link)
        print(f"{name} {dist.version}")


if __name__ == "__main__":
    main()
