"""registry+v1 bundles (OperatorHub's format): loading, configuration and rendering, as OLM v1 does them.

Owns turning a bundle (a directory or an OCI image layout of a bundle image) into the plain manifests OLM v1's
renderer produces for the same install namespace, configuration and certificate provider:

- :mod:`.model`: the loaded bundle as plain data, and the errors of this package;
- :mod:`.source`: reading a bundle directory; :mod:`.oci`: unpacking an OCI image layout into one;
  :mod:`.pull`: pulling a bundle or index image from its registry into such a layout (``docker://REF``), with
  :mod:`.imageref` (references as docker normalises them) and :mod:`.registries` (the containers configuration:
  mirrors, insecure registries, certificates, credentials; found where :mod:`.configfile` says, as for the
  signature files); the only network access of this package; the
  signature policy it holds to: :mod:`.policy` (policy.json), :mod:`.registriesd` (where signatures are kept,
  its YAML decoded as Go's yaml.v3 decodes it: :mod:`.goyaml`),
  :mod:`.signatures` (verifying them as containers/image does: GPG through ``gpg``, sigstore public keys) and
  :mod:`.sigstore` (Rekor SETs, Fulcio certificates and those of a policy's own CA), on
  :mod:`.x509chain`, :mod:`.x509names` and :mod:`.x509policies` (X.509 chains, names and
  certificate policies as Go's crypto/x509 checks them), and :mod:`.gourl` (URLs as Go's ``url.Parse`` reads
  them, for certificate URIs and lookaside URLs);
  :mod:`.documents`: reading YAML and JSON files (manifests, configurations) as kubectl reads them;
- :mod:`.config`: the configuration schema derived from the CSV's install modes, and the steps from a
  configuration file to what the renderer uses; :mod:`.configerrors`: strict validation against that schema,
  worded as OLM v1 words it; :mod:`.confighints`: what we say beside OLM's words (keys its decoder drops, the
  fields behind a message that names none);
- :mod:`.render` and the modules it uses: objects for objects, OLM v1's generators, validators, certificate
  providers and ``deploymentConfig`` merge (:mod:`.deploymentconfig`), over the bundle decoded once into Go's
  types (:mod:`.typed`);
- Go's semantics where OLM's output depends on them: :mod:`.gotypes` (the one description of the Kubernetes Go
  types OLM's output goes through), and the two ways OLM v1 decodes into them, each with its own Go rules:
  :mod:`.gounstructured` (Kubernetes' unstructured converter, for the CSV and the CRDs) and
  :mod:`.gounmarshal` (``encoding/json``'s ``Unmarshal``, for ``deploymentConfig`` and manifests'
  ``metadata``); :mod:`.gotext` (Go's quoting, JSON, number and time printing, key folding);
- :mod:`.install`: the whole path a ClusterExtension takes (refusals, configuration, rendering), and what a
  revision made from a bundle records (OLM v1's annotations, the options it was rendered with).
- catalogs: :mod:`.catalog` reads a File-Based Catalog (a directory, a file, or an index image's OCI layout
  through :mod:`.oci`) as operator-controller reads one; :mod:`.resolve` is OLM v1's resolver over one package
  (upgrade edges, channels, version ranges, deprecations, its messages), with versions read as OLM v1 reads them:
  blang/semver (:mod:`.semver`, ``skipRange``) and Masterminds/semver (:mod:`.constraints`, version ranges).

Spec: ``shared/spec/bundles.md``. Pure functions over plain ``dict`` objects: no cluster access (registries only,
through :mod:`.pull`). May import
:mod:`common.contract`, :mod:`common.bundle.manifests` (to read YAML as Kubernetes reads it) and
:mod:`common.bundle.phasing` (objects cleaned as a revision holds them); never :mod:`common.cluster`,
:mod:`common.cosctl` or a test double.
"""
