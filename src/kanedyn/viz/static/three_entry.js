// The parts of three.js that kanedyn's report uses, bundled into one classic script
// that defines the global THREE (see build_three.sh).
export {
  AmbientLight, BoxGeometry, BufferAttribute, BufferGeometry, Color, CylinderGeometry,
  DirectionalLight, DoubleSide, GridHelper, Group, HemisphereLight, Mesh, MeshStandardMaterial,
  PerspectiveCamera, Quaternion, REVISION, Scene, SphereGeometry, Vector3, WebGLRenderer,
} from 'three';
export { OrbitControls } from 'three/examples/jsm/controls/OrbitControls.js';
