"""The classroom tools: apps built on the player and the views, for teaching a lab rather than working it.

Models no Pulsar class. `present` (`pulsarlab present`: Voilà serving a lab with the code hidden, projector-sized;
`present_kernel` is what its kernels run at start-up) and `export` (`pulsarlab export`: a lab executed and written as
one offline page, each player drawn by `animation` as a plotly animation). Their Voilà and nbconvert templates are
in ``templates/``, the offline page's script and styles in ``static/``. The player and the views never import
these (an import contract in pyproject.toml); a lab imports none of them.
"""
