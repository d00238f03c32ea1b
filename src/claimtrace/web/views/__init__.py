"""The site's views: what each page shows, as data (the walkthrough, Explore).

May import: everything below ``web``, and ``web``'s own rendering helpers.
"""
