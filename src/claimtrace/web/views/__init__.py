"""The site's views: what each page shows, as data read from the build. The landing page (the
findings over dev, the live page's example claims), the walkthrough (one
claim through every stage, a package with a module per stage group), Explore (a whole split),
the classifier's table for the browser, the results page (the build's threshold sweep), the
seeds page (the shipped seed-spread file beside the build's checkpoints), the parity checklist, and the build's status (with :func:`~.status.public_paths`, which keeps the
machine's folders off every page).

May import: everything below ``web``, and ``web``'s own rendering helpers.
"""
