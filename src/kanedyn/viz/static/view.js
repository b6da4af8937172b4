// kanedyn's 3D view of a trajectory (inlined into report.html by kanedyn.viz.report).
//
// Data: #anim-data (kanedyn.viz.animation_frames: per frame each body's origin, centre of
// mass and orientation) and #scene-data (kanedyn.viz.scene.scene_data: the meshes once,
// one instance per visual). With WebGL (three.js, embedded) bodies with visuals are drawn
// as their meshes and the others as today's skeleton (origin joined to the parent's, a
// thin stick to the centre of mass); without WebGL a 2D canvas draws the skeleton alone.
//
// The page reports on itself in the DOM (read by tests in headless Chromium): #status
// ("ok" once two frames are drawn without error), #frame (frames drawn), #errors
// (window.onerror and console.error), #renderer ("webgl" or "2d"), #triangles (the
// triangles of the visuals in the scene), #drawn-triangles (what WebGL drew in the last
// frame) and, opened as page.html#selftest, #selftest: a drag, a wheel turn and two
// slider positions played on the page itself, with what they did (the camera's angles
// and distance; the last body's origin and its first visual's origin in the world).
(function () {
  var errors = document.getElementById('errors');
  function report(msg) { errors.textContent += msg + '\n'; }
  window.onerror = function (msg, src, line) { report('error: ' + msg + ' (line ' + line + ')'); };
  var cerr = console.error;
  console.error = function () {
    report('console.error: ' + Array.prototype.join.call(arguments, ' '));
    if (cerr) cerr.apply(console, arguments);
  };
  var D = JSON.parse(document.getElementById('anim-data').textContent);
  var sceneEl = document.getElementById('scene-data');
  var S = sceneEl ? JSON.parse(sceneEl.textContent)
    : {meshes: [], instances: [], triangles: 0, bodies: []};
  var box = document.getElementById('view');
  var slider = document.getElementById('slider'), button = document.getElementById('play');
  var tlabel = document.getElementById('time'), counter = document.getElementById('frame');
  var status = document.getElementById('status');
  var W = parseInt(box.getAttribute('data-width') || '720', 10);
  var H = parseInt(box.getAttribute('data-height') || '480', 10);
  var F = D.t.length, nb = D.parents.length;
  var lo = D.bounds[0].slice(), hi = D.bounds[1].slice();
  if (S.bounds) {
    for (var k = 0; k < 3; k++) {
      lo[k] = Math.min(lo[k], S.bounds[0][k]); hi[k] = Math.max(hi[k], S.bounds[1][k]);
    }
  }
  var centre = [0, 1, 2].map(function (k) { return 0.5 * (lo[k] + hi[k]); });
  var radius = Math.max(1e-6, 0.5 * Math.hypot(hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]));
  var hasVisual = {};
  S.bodies.forEach(function (b) { hasVisual[b] = true; });
  var anchor = {};
  for (var r = 0; r < D.roots.length; r++) anchor[D.roots[r]] = D.anchors[r];
  var frame = 0, drawn = 0, playing = true;
  slider.max = F - 1;

  function webglAvailable() {
    if (typeof THREE === 'undefined') return false;
    try {
      var c = document.createElement('canvas');
      return !!(c.getContext('webgl2') || c.getContext('webgl'));
    } catch (e) { return false; }
  }

  // ---- WebGL: three.js ------------------------------------------------------------------
  function makeGL() {
    var renderer = new THREE.WebGLRenderer({antialias: true, preserveDrawingBuffer: true});
    renderer.setPixelRatio(1);
    renderer.setSize(W, H);
    box.appendChild(renderer.domElement);
    var scene = new THREE.Scene();
    scene.background = new THREE.Color(0xfbfbfd);
    var fov = 40;
    var camera = new THREE.PerspectiveCamera(fov, W / H, radius / 100, radius * 100);
    camera.up.set(0, 0, 1);                                 // world z is up
    var dist = 0.95 * radius / Math.sin(0.5 * fov * Math.PI / 180);   // the box in view
    var yaw = -0.6, pitch = 0.35;                           // from the front right, above
    camera.position.set(centre[0] + dist * Math.cos(pitch) * Math.cos(yaw),
                        centre[1] + dist * Math.cos(pitch) * Math.sin(yaw),
                        centre[2] + dist * Math.sin(pitch));
    var sky = new THREE.HemisphereLight(0xffffff, 0x8090a0, 1.6);
    sky.position.set(0, 0, 1);
    scene.add(sky);
    var key = new THREE.DirectionalLight(0xffffff, 1.8);   // rides with the camera
    key.position.set(1, 1, 2);
    camera.add(key);
    scene.add(camera);
    var controls = new THREE.OrbitControls(camera, renderer.domElement);
    controls.target.set(centre[0], centre[1], centre[2]);
    controls.update();
    var materials = {};
    function material(rgba) {
      var k = rgba.join(',');
      if (!materials[k]) {
        materials[k] = new THREE.MeshStandardMaterial({
          color: new THREE.Color(rgba[0], rgba[1], rgba[2]), roughness: 0.65, metalness: 0.05,
          flatShading: true, side: THREE.DoubleSide, transparent: rgba[3] < 1,
          opacity: rgba[3]});
      }
      return materials[k];
    }
    function bytes(b64) {
      var s = atob(b64), out = new Uint8Array(s.length);
      for (var i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
      return out.buffer;
    }
    var geometries = S.meshes.map(function (m) {
      var g = new THREE.BufferGeometry();
      g.setAttribute('position', new THREE.BufferAttribute(new Float32Array(bytes(m.v)), 3));
      var idx = m.width === 2 ? new Uint16Array(bytes(m.f)) : new Uint32Array(bytes(m.f));
      g.setIndex(new THREE.BufferAttribute(idx, 1));
      g.computeVertexNormals();
      return g;
    });
    var groups = [];
    for (var i = 0; i < nb; i++) {
      groups.push(new THREE.Group());
      scene.add(groups[i]);
    }
    var firstVisual = {};
    S.instances.forEach(function (inst) {
      var mesh = new THREE.Mesh(geometries[inst.mesh], material(inst.rgba));
      if (!(inst.body in firstVisual)) firstVisual[inst.body] = mesh;
      mesh.position.set(inst.p[0], inst.p[1], inst.p[2]);
      mesh.quaternion.set(inst.q[1], inst.q[2], inst.q[3], inst.q[0]);
      mesh.userData.visual = true;
      (inst.body >= 0 ? groups[inst.body] : scene).add(mesh);
    });
    // the skeleton of the bodies without visuals: sticks and balls, as the 2D drawing
    var unitY = new THREE.Vector3(0, 1, 0);
    var stickGeom = new THREE.CylinderGeometry(1, 1, 1, 12);
    var ballGeom = new THREE.SphereGeometry(1, 16, 12);
    var dark = material([0.2, 0.27, 0.33, 1]), pale = material([0.54, 0.6, 0.67, 1]);
    var orange = material([0.93, 0.5, 0, 1]), blue = material([0.16, 0.53, 0.8, 1]);
    var skel = [];
    for (var b = 0; b < nb; b++) {
      if (hasVisual[b]) continue;
      var s = {body: b, bone: new THREE.Mesh(stickGeom, dark), arm: new THREE.Mesh(stickGeom, pale),
               joint: new THREE.Mesh(ballGeom, orange), com: new THREE.Mesh(ballGeom, blue)};
      s.joint.scale.setScalar(0.025 * radius);
      s.com.scale.setScalar(0.02 * radius);
      [s.bone, s.arm, s.joint, s.com].forEach(function (o) { scene.add(o); });
      skel.push(s);
    }
    D.anchors.forEach(function (a) {
      var m = new THREE.Mesh(new THREE.BoxGeometry(1, 1, 1), material([0.33, 0.33, 0.33, 1]));
      m.scale.setScalar(0.04 * radius);
      m.position.set(a[0], a[1], a[2]);
      scene.add(m);
    });
    function stick(o, a, b, width) {
      var va = new THREE.Vector3(a[0], a[1], a[2]), vb = new THREE.Vector3(b[0], b[1], b[2]);
      var d = vb.clone().sub(va), L = d.length();
      o.visible = L > 1e-9;
      if (!o.visible) return;
      o.position.copy(va).add(vb).multiplyScalar(0.5);
      o.quaternion.setFromUnitVectors(unitY, d.divideScalar(L));
      o.scale.set(width, L, width);
    }
    var trianglesInScene = 0;
    scene.traverse(function (o) {
      if (o.userData.visual) {
        var g = o.geometry;
        trianglesInScene += (g.index ? g.index.count : g.attributes.position.count) / 3;
      }
    });
    controls.addEventListener('change', function () { renderer.render(scene, camera); });
    return {
      name: 'webgl', canvas: renderer.domElement, triangles: trianglesInScene,
      show: function (f) {
        var O = D.origins[f], C = D.coms[f], Q = D.quats[f];
        for (var i = 0; i < nb; i++) {
          groups[i].position.set(O[i][0], O[i][1], O[i][2]);
          groups[i].quaternion.set(Q[i][1], Q[i][2], Q[i][3], Q[i][0]);
        }
        skel.forEach(function (s) {
          var p = D.parents[s.body], a = p < 0 ? anchor[s.body] : O[p];
          var o = O[s.body];
          if (a) stick(s.bone, a, o, 0.012 * radius); else s.bone.visible = false;
          stick(s.arm, o, C[s.body], 0.005 * radius);
          s.joint.position.set(o[0], o[1], o[2]);
          s.com.position.set(C[s.body][0], C[s.body][1], C[s.body][2]);
        });
        renderer.render(scene, camera);
        document.getElementById('drawn-triangles').textContent = renderer.info.render.triangles;
      },
      angles: function () { return [controls.getAzimuthalAngle(), controls.getPolarAngle()]; },
      distance: function () { return camera.position.distanceTo(controls.target); },
      bodyPosition: function (i) {
        var v = new THREE.Vector3();
        (hasVisual[i] ? groups[i] : skel.filter(function (s) { return s.body === i; })[0].joint)
          .getWorldPosition(v);
        return [v.x, v.y, v.z];
      },
      visualPosition: function (i) {
        if (!(i in firstVisual)) return null;
        var v = new THREE.Vector3();
        firstVisual[i].getWorldPosition(v);
        return [v.x, v.y, v.z];
      },
      drag: function (x0, y0, x1, y1) {
        var c = renderer.domElement, o = {pointerId: 1, pointerType: 'mouse', isPrimary: true,
                                          button: 0, buttons: 1, bubbles: true};
        c.dispatchEvent(new PointerEvent('pointerdown', Object.assign({clientX: x0, clientY: y0}, o)));
        c.dispatchEvent(new PointerEvent('pointermove', Object.assign({clientX: x1, clientY: y1}, o)));
        c.dispatchEvent(new PointerEvent('pointerup', Object.assign({clientX: x1, clientY: y1}, o,
                                                                     {buttons: 0})));
      },
      wheel: function (dy) {
        renderer.domElement.dispatchEvent(new WheelEvent('wheel', {deltaY: dy, deltaMode: 0,
                                                                   bubbles: true, cancelable: true}));
      },
    };
  }

  // ---- 2D canvas: the skeleton in a perspective projection (no WebGL) -------------------
  function make2D() {
    var canvas = document.createElement('canvas');
    canvas.width = W; canvas.height = H;
    box.appendChild(canvas);
    var ctx = canvas.getContext('2d');
    var view = {yaw: -0.6, pitch: 0.35}, zoom = 1;
    function project(p) {
      var x = p[0] - centre[0], y = p[1] - centre[1], z = p[2] - centre[2];
      var cy = Math.cos(view.yaw), sy = Math.sin(view.yaw);
      var cp = Math.cos(view.pitch), sp = Math.sin(view.pitch);
      var x1 = cy * x - sy * y, y1 = sy * x + cy * y;          // turn about z
      var depth = cp * y1 + sp * z, up = -sp * y1 + cp * z;    // tilt about the screen's x
      var dist = 3.2 * radius, f = zoom * 0.45 * Math.min(W, H) / radius;
      var s = f * dist / (dist + depth);
      return [W / 2 + s * x1, H / 2 - s * up, depth];
    }
    function line(a, b, width, colour) {
      ctx.strokeStyle = colour; ctx.lineWidth = width;
      ctx.beginPath(); ctx.moveTo(a[0], a[1]); ctx.lineTo(b[0], b[1]); ctx.stroke();
    }
    function dot(a, r, colour) {
      ctx.fillStyle = colour; ctx.beginPath(); ctx.arc(a[0], a[1], r, 0, 2 * Math.PI); ctx.fill();
    }
    function axes() {
      var o = project(centre.map(function (c, k) { return k == 2 ? lo[2] : c; }));
      var L = 0.4 * radius, names = ['x', 'y', 'z'], cols = ['#c33', '#3a3', '#33c'];
      for (var k = 0; k < 3; k++) {
        var e = centre.map(function (c, j) { return (j == 2 ? lo[2] : c) + (j == k ? L : 0); });
        var pe = project(e);
        line(o, pe, 1, cols[k]); ctx.fillStyle = cols[k]; ctx.fillText(names[k], pe[0] + 3, pe[1]);
      }
    }
    var shown = 0, drag = null, redraw = function () { api.show(shown); };
    canvas.addEventListener('mousedown', function (e) { drag = [e.clientX, e.clientY]; });
    window.addEventListener('mouseup', function () { drag = null; });
    window.addEventListener('mousemove', function (e) {
      if (!drag) return;
      view.yaw += 0.01 * (e.clientX - drag[0]);
      view.pitch = Math.max(-1.5, Math.min(1.5, view.pitch + 0.01 * (e.clientY - drag[1])));
      drag = [e.clientX, e.clientY]; redraw();
    });
    canvas.addEventListener('wheel', function (e) {
      e.preventDefault(); zoom *= Math.exp(-0.001 * e.deltaY); redraw();
    }, {passive: false});
    var api = {
      name: '2d', canvas: canvas, triangles: 0,
      show: function (f) {
        shown = f;
        ctx.clearRect(0, 0, W, H);
        ctx.fillStyle = '#fbfbfd'; ctx.fillRect(0, 0, W, H);
        axes();
        var O = D.origins[f], C = D.coms[f], items = [];
        for (var i = 0; i < nb; i++) {
          var a = D.parents[i] < 0 ? anchor[i] : O[D.parents[i]];   // none: floating
          var po = project(O[i]), pc = project(C[i]), pa = a ? project(a) : po;
          items.push({d: (pa[2] + po[2]) / 2, f: function (pa, po, pc) { return function () {
            line(pa, po, 4, '#345'); line(po, pc, 1.5, '#89a');
            dot(po, 4, '#e80'); dot(pc, 3, '#28c'); }; }(pa, po, pc)});
        }
        for (var r2 = 0; r2 < D.anchors.length; r2++) {
          var pA = project(D.anchors[r2]);
          ctx.fillStyle = '#555'; ctx.fillRect(pA[0] - 5, pA[1] - 5, 10, 10);
        }
        items.sort(function (u, v) { return v.d - u.d; });   // far first
        items.forEach(function (it) { it.f(); });
      },
      angles: function () { return [view.yaw, view.pitch]; },
      distance: function () { return 3.2 * radius / zoom; },
      bodyPosition: function (i) { return D.origins[shown][i].slice(); },
      visualPosition: function () { return null; },
      drag: function (x0, y0, x1, y1) {
        canvas.dispatchEvent(new MouseEvent('mousedown', {clientX: x0, clientY: y0, bubbles: true}));
        window.dispatchEvent(new MouseEvent('mousemove', {clientX: x1, clientY: y1, bubbles: true}));
        window.dispatchEvent(new MouseEvent('mouseup', {clientX: x1, clientY: y1, bubbles: true}));
      },
      wheel: function (dy) {
        canvas.dispatchEvent(new WheelEvent('wheel', {deltaY: dy, bubbles: true, cancelable: true}));
      },
    };
    return api;
  }

  var view = webglAvailable() ? makeGL() : make2D();
  document.getElementById('renderer').textContent = view.name;
  document.getElementById('triangles').textContent = view.triangles;
  view.canvas.style.cursor = 'grab';
  function draw() {
    view.show(frame);
    slider.value = frame;
    tlabel.textContent = 't = ' + D.t[frame].toFixed(3) + ' s';
    drawn += 1; counter.textContent = drawn;
    if (drawn >= 2 && status.textContent !== 'ok' && errors.textContent === '') {
      status.textContent = 'ok';
    }
  }
  var span = F > 1 ? D.t[F - 1] - D.t[0] : 1;
  var interval = Math.max(16, Math.min(200, 1000 * span / Math.max(1, F - 1)));
  setInterval(function () { if (playing) { frame = (frame + 1) % F; draw(); } }, interval);
  button.onclick = function () {
    playing = !playing; button.textContent = playing ? 'pause' : 'play';
  };
  slider.oninput = function () { frame = parseInt(slider.value, 10); draw(); };
  draw();
  if (location.hash === '#selftest') {
    var was = playing;
    playing = false;
    var before = view.angles(), d0 = view.distance();
    view.drag(100, 100, 160, 130);
    var after = view.angles(), d1 = view.distance();
    view.wheel(-300);
    var d2 = view.distance();
    var body = nb - 1, positions = [], visuals = [], frames = [0, Math.floor((F - 1) / 2)];
    frames.forEach(function (f) {
      slider.value = f;
      slider.dispatchEvent(new Event('input', {bubbles: true}));
      positions.push(view.bodyPosition(body));
      visuals.push(view.visualPosition(body));
    });
    playing = was;
    document.getElementById('selftest').textContent = JSON.stringify({
      before: before, after: after, distance: [d0, d1, d2],
      slider: {body: body, frames: frames, positions: positions, visuals: visuals}});
  }
})();
