"""What the page scripts share: the engine and cached views, the error guard, safe text, URL state, the review
sidebar, tables, charts and the verdict and "what ran" panels. A page script is a page; these are its parts."""
