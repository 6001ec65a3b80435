;; Workload "clojure": Clojure 1.11 (Debian package clojure) runs this script: it compiles
;; generated functions at run time (eval), then works persistent maps, vectors, sets, lazy
;; sequences, transducers and string building over generated words. Chosen for the bench
;; without being measured first. Everything comes from fixed seeds, so the line
;; `checksum=...` it prints is the same in every run.

(set! *warn-on-reflection* false)

(defn word [^java.util.Random r]
  (let [n (+ 3 (.nextInt r 7))
        sb (StringBuilder.)]
    (dotimes [_ n] (.append sb (char (+ 97 (.nextInt r 26)))))
    (.toString sb)))

(defn generated-fns
  "Compiles n small functions from generated forms, each a different arithmetic."
  [n]
  (vec (for [i (range n)]
         (eval `(fn [x#] (+ (* x# ~(inc (mod i 7))) (bit-xor x# ~i) (quot x# ~(inc (mod i 5)))))))))

(defn word-stats [words]
  (let [freq (frequencies words)
        by-len (group-by count (keys freq))
        top (take 50 (sort-by (juxt (comp - val) key) freq))]
    [(count freq)
     (reduce + (map (fn [[k v]] (* k (count v))) by-len))
     (reduce + (map (comp hash key) top))]))

(defn index [words]
  (persistent!
    (reduce (fn [m [i w]] (assoc! m (subs w 0 2) (conj (get m (subs w 0 2) []) i)))
            (transient {})
            (map-indexed vector words))))

(defn run-round [seed]
  (let [r (java.util.Random. seed)
        words (vec (repeatedly 150000 #(word r)))
        [distinct-words letters top-hash] (word-stats words)
        idx (index words)
        posting (reduce + (map count (vals idx)))
        xf (comp (filter #(> (count %) 5)) (map clojure.string/upper-case) (map hash))
        upper (transduce xf + 0 words)
        sets (reduce (fn [s w] (if (even? (count w)) (conj s w) (disj s w))) #{} words)
        text (clojure.string/join " " (take 20000 words))
        sentences (count (re-seq #"[aeiou]{2}" text))]
    (+ distinct-words letters top-hash posting upper (count sets) sentences)))

(let [fns (generated-fns 300)
      applied (reduce + (map-indexed (fn [i f] (f (* 1000 i))) fns))
      rounds (reduce + (map run-round (range 1 7)))]
  (println (str "checksum=" (+ applied rounds))))
